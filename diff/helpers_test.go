package diff

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// writeCorpus writes a synth corpus into a new directory of t.TempDir().
func writeCorpus(t testing.TB, name string, opts synth.Options) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if _, err := synth.Write(context.Background(), dir, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

// load loads paths into a new in-memory database with the detectors, as
// retrace diff does, and returns the side.
func load(t testing.TB, label string, paths ...string) Input {
	t.Helper()
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rep, _, err := detectors.Detect(ctx, db, paths, detectors.Catalog(), detectors.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Input{Side: Side{Label: label, Paths: paths}, DB: db, Report: rep}
}
