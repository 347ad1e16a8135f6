package detectors

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// decodeAll returns every event r holds that is not of a type in skip, as
// "line seq type", and the errors' lines.
func decodeAll(r io.Reader, skip map[string]bool) []string {
	dec := trajectory.NewDecoder(r, "f.jsonl")
	var out []string
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			if errors.Is(err, trajectory.ErrBinary) {
				return append(out, "binary")
			}
			out = append(out, fmt.Sprintf("%d error", dec.Line()))
			continue
		}
		if !skip[string(ev.Type())] {
			out = append(out, fmt.Sprintf("%d %d %s", dec.Line(), ev.Seq, ev.Type()))
		}
	}
}

// filteredEqualsUnfiltered checks that decoding through the filter gives
// the events of the kept types at the same lines as decoding all of data.
func filteredEqualsUnfiltered(t *testing.T, data string, skip map[string]bool) {
	t.Helper()
	want := decodeAll(strings.NewReader(data), skip)
	got := decodeAll(newTypeFilter(strings.NewReader(data), skip), skip)
	// An error line the filter blanked is one whose event type is
	// skipped: it may disappear, nothing else may change.
	var wantKept []string
	for _, w := range want {
		if !strings.HasSuffix(w, " error") {
			wantKept = append(wantKept, w)
		}
	}
	var gotKept []string
	for _, g := range got {
		if !strings.HasSuffix(g, " error") {
			gotKept = append(gotKept, g)
		}
	}
	if strings.Join(gotKept, "\n") != strings.Join(wantKept, "\n") {
		t.Fatalf("through the filter\n%s\nwant\n%s", strings.Join(gotKept, "\n"), strings.Join(wantKept, "\n"))
	}
}

func TestTheTypeFilterKeepsLinesAndTheEventsItDoesNotSkip(t *testing.T) {
	basic, err := os.ReadFile(filepath.Join("testdata", "clean", "lost_call.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	skip := skipTypes(Catalog())
	if !skip["workspace_snapshot"] || skip["model_request"] {
		t.Fatalf("skip set %v", skip)
	}
	lines := strings.SplitAfter(string(basic), "\n")
	long := strings.Replace(lines[4], `"input":{`, `"input":{"pad":"`+strings.Repeat("x", 600<<10)+`",`, 1)
	for _, tc := range []struct{ name, data string }{
		{"A recorded session.", string(basic)},
		{"A line longer than the filter's buffer.", lines[0] + long + strings.Join(lines[1:], "")},
		{"A skipped type named inside a nested object first.", `{"v":1,"payload":{"type":"workspace_snapshot"},"type":"model_request"}` + "\n" + string(basic)},
		{"A last line without a newline.", strings.TrimSuffix(string(basic), "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			filteredEqualsUnfiltered(t, tc.data, skip)
		})
	}
}

func FuzzTypeFilter(f *testing.F) {
	basic, err := os.ReadFile(filepath.Join("testdata", "clean", "lost_call.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(basic))
	sc := bufio.NewScanner(strings.NewReader(string(basic)))
	for sc.Scan() {
		f.Add(sc.Text())
	}
	skip := skipTypes(Catalog())
	f.Fuzz(func(t *testing.T, data string) {
		filteredEqualsUnfiltered(t, data, skip)
	})
}
