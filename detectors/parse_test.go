package detectors

import (
	"slices"
	"testing"
)

func TestParseStringsReadsJSONTextAndDecodedLists(t *testing.T) {
	want := []string{"20261201-101500.000-aaaaaaaa", "20261201-101501.000-bbbbbbbb"}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"a JSON list as text", `["20261201-101500.000-aaaaaaaa","20261201-101501.000-bbbbbbbb"]`},
		{"a JSON list as bytes", []byte(`["20261201-101500.000-aaaaaaaa","20261201-101501.000-bbbbbbbb"]`)},
		{"a list the driver already decoded", []any{"20261201-101500.000-aaaaaaaa", "20261201-101501.000-bbbbbbbb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStrings(tc.v)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("parseStrings(%v) = %q, %v; want %q", tc.v, got, err, want)
			}
		})
	}
	if _, err := parseStrings("[not json"); err == nil {
		t.Error("text that is not JSON must be an error, not an empty list")
	}
}
