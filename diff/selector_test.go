package diff

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// TestTagSelectorsSplitOneCorpus tags the sessions of one synth corpus
// prompt=v1 or prompt=v2 (alternately, in their session_start) and
// diffs --base tag:prompt=v1 --cand tag:prompt=v2: each side holds its
// own sessions, and together all of them.
func TestTagSelectorsSplitOneCorpus(t *testing.T) {
	dir := writeCorpus(t, "corpus", synth.Options{Sessions: 40, Seed: 4})
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) != 40 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// synth tags every session (project, source): add prompt to them.
		tag := []byte(`"tags":{"prompt":"v1",`)
		if i%2 == 1 {
			tag = []byte(`"tags":{"prompt":"v2",`)
		}
		if !bytes.Contains(b, []byte(`"tags":{`)) {
			t.Fatalf("%s: the session_start has no tags to add to", f)
		}
		b = bytes.Replace(b, []byte(`"tags":{`), tag, 1)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := load(t, "corpus", dir)
	bs, _ := ParseSelector("tag:prompt=v1")
	cs, _ := ParseSelector("tag:prompt=v2")
	base, cand := in, in
	base.Side, base.Cond = Side{Label: bs.String(), Selector: bs.String()}, bs.Cond()
	cand.Side, cand.Cond = Side{Label: cs.String(), Selector: cs.String()}, cs.Cond()
	res, err := Compare(context.Background(), base, cand, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base.Sessions != 20 || res.Cand.Sessions != 20 {
		t.Errorf("sides of %d and %d sessions, want 20 each", res.Base.Sessions, res.Cand.Sessions)
	}
	if len(res.Rows) == 0 {
		t.Errorf("no rows")
	}
}
