package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// maxLabelValue bounds a run label's value: labels group runs, they do not
// carry text.
const maxLabelValue = 128

// labelFlag is a repeatable --tag KEY=VALUE flag: the run labels recorded
// in session_start.tags, by which diff and query tell runs apart (a
// prompt version, a model, a branch).
type labelFlag struct {
	labels map[string]string
	// hint ends the error for a value without "=", where a command had a
	// --tag of another meaning before.
	hint string
}

// String implements pflag.Value.
func (f *labelFlag) String() string {
	keys := slices.Sorted(maps.Keys(f.labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + f.labels[k]
	}
	return strings.Join(parts, ",")
}

// Type implements pflag.Value.
func (f *labelFlag) Type() string { return "key=value" }

// Set implements pflag.Value: it adds one label, refusing a malformed one
// or a key given twice.
func (f *labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		msg := fmt.Sprintf("%q: run labels are key=value", s)
		if f.hint != "" {
			msg += "; " + f.hint
		}
		return fmt.Errorf("%s (a label: --tag prompt=v2)", msg)
	}
	if err := checkLabel(k, v); err != nil {
		return err
	}
	if old, dup := f.labels[k]; dup && old != v {
		return fmt.Errorf("%q: the label %s is given twice (%s and %s); give each key once", s, k, old, v)
	}
	if f.labels == nil {
		f.labels = map[string]string{}
	}
	f.labels[k] = v
	return nil
}

// checkLabel checks a run label's key and value. The key is a trajectory
// label (validate checks the tags' keys the same way); the value may hold
// the few more characters a version or a branch name needs, and no blank,
// so that a label never carries a message or a command.
func checkLabel(k, v string) error {
	if !trajectory.IsLabel(k) {
		return fmt.Errorf("label key %q: use 1 to 64 of A-Z a-z 0-9 _ . : -, starting with a letter or digit", k)
	}
	if v == "" || len(v) > maxLabelValue {
		return fmt.Errorf("label %s=%q: give a value of 1 to %d characters", k, v, maxLabelValue)
	}
	for _, r := range v {
		if !labelValueRune(r) {
			return fmt.Errorf("label %s=%q: %q is not allowed in a value; use A-Z a-z 0-9 _ . : - / + @", k, v, r)
		}
	}
	return nil
}

func labelValueRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:-/+@", r)
}
