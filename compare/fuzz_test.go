package compare

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// decodeAll keeps every event the decoder could make sense of, as a
// replay command reading an outside file would.
func decodeAll(data []byte) []trajectory.Event {
	dec := trajectory.NewDecoder(bytes.NewReader(data), "fuzz")
	var evs []trajectory.Event
	for i := 0; i < 10000; i++ {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if ev.Payload != nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// FuzzCompare feeds outside trajectories to Compare: it must never panic,
// a session must compare identical with itself, and both renderers must
// succeed.
func FuzzCompare(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("..", "trajectory", "testdata", "valid", "*.jsonl"))
	for i, n := range names {
		a, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(names[(i+1)%len(names)])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a, b)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, rb := decodeAll(a), decodeAll(b)
		if r := Sessions(ra, decodeAll(a), Options{}); !r.Identical() {
			t.Fatalf("a session differs from itself: %+v", r.Divergences)
		}
		r := Sessions(ra, rb, Options{PathRewrites: []PathRewrite{{Old: "/tmp", New: "/x"}}, Tools: map[string]Level{"bash": LevelExitCode}})
		for _, render := range []func(io.Writer) error{r.Markdown, r.MarkdownDetails, r.Table, r.Details} {
			if err := render(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzNormalize feeds outside rules (a --normalize value) and outside text
// to the normaliser: a bad rule is an ErrRule error, never a panic; a good
// one, with the built-in rules, rewrites any text without panicking, the
// same way every time, and a rewritten text stays valid UTF-8 when the
// input and the replacement are.
func FuzzNormalize(f *testing.F) {
	f.Add(`took (\d+)ms=>took N ms`, "took 12ms at 2026-12-01T20:05:21Z in /tmp/x pid 42\nTue Dec  1 20:05:21 UTC 2026")
	f.Add(`a(b=>x`, "ab")
	f.Add(`x*=>y`, "xx")
	f.Add(`(?i)ID-([0-9a-f]+)=>${1}`, "-rw-r--r-- 1 root root 5 Jan  1  2020 data.txt [1] 4242")
	f.Add(`=>`, "µs 0m0.012s 123e4567-e89b-12d3-a456-426614174000")
	f.Fuzz(func(t *testing.T, flag, text string) {
		r, err := ParseFlag("fuzz", flag)
		if err != nil {
			if !errors.Is(err, ErrRule) {
				t.Fatalf("a bad rule's error %v does not wrap ErrRule", err)
			}
			return
		}
		a := newNormalizer(Options{Rules: []Rule{r}, TempDirs: []string{"/scratch"}})
		b := a.other()
		x, y := a.text(text, ScopeToolOutput, "bash"), b.text(text, ScopeToolOutput, "bash")
		if x != y {
			t.Fatalf("two normalisations of one text differ: %q and %q", x, y)
		}
		if utf8.ValidString(text) && utf8.ValidString(r.Replace) && !utf8.ValidString(x) {
			t.Fatalf("normalising %q made invalid UTF-8 %q", text, x)
		}
		for _, b := range append(Builtins("/scratch"), r) {
			if b.need != nil && !b.need(text) && b.Pattern.MatchString(text) {
				t.Fatalf("rule %s's quick test skips %q, which it matches", b.Name, text)
			}
			if got, _ := replaceAll(b, text); got != b.Pattern.ReplaceAllString(text, b.Replace) {
				want := b.Pattern.ReplaceAllString(text, b.Replace)
				t.Fatalf("rule %s replaces %q as %q, regexp as %q", b.Name, text, got, want)
			}
		}
		_ = unifiedDiff(text, x)
		_, _, _ = firstDifference(text, x)
	})
}
