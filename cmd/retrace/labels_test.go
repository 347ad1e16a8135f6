package main

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestLabelFlagAcceptsKeyValueLabelsAndRefusesTheRest(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"A key and a value are a label.", "prompt=v2", ""},
		{"A value may hold a branch name or a version.", "branch=fix/flaky+1@x", ""},
		{"A second = in the value is refused.", "k=a=b", "is not allowed in a value"},
		{"A bare word is a scenario tag of old, and the error says where that went.", "golden", "run labels are key=value; to select scenarios by tag use --filter-tag"},
		{"An empty key is refused.", "=v", `label key ""`},
		{"A key with a blank is refused.", "a b=v", `label key "a b"`},
		{"An empty value is refused.", "k=", "give a value of 1 to 128 characters"},
		{"A value with a blank is refused.", "k=a b", "is not allowed in a value"},
		{"A value too long is refused.", "k=" + strings.Repeat("x", 129), "give a value of 1 to 128 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &labelFlag{hint: "to select scenarios by tag use --filter-tag"}
			err := f.Set(tc.in)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Set(%q) = %v, want it accepted", tc.in, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Set(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
		})
	}
	f := &labelFlag{}
	if err := f.Set("k=a"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("k=b"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("a key given twice with two values: err = %v", err)
	}
}

// FuzzLabelFlag checks that any --tag value is either refused with an
// error or becomes a label whose key validate accepts and whose value has
// no blank, and that Set never panics.
func FuzzLabelFlag(f *testing.F) {
	for _, s := range []string{"prompt=v2", "golden", "=", "k=", "a b=c", "k=v=w", "k=\x00", "ü=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl := &labelFlag{}
		if err := fl.Set(s); err != nil {
			return
		}
		for k, v := range fl.labels {
			if !trajectory.IsLabel(k) || v == "" || strings.ContainsAny(v, " \t\r\n") || len(v) > maxLabelValue {
				t.Fatalf("Set(%q) accepted %q=%q", s, k, v)
			}
		}
	})
}
