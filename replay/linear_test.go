package replay

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// linearWorkspace is a workspace with a notes file long enough for a
// session of turns reads.
func linearWorkspace(tb testing.TB, turns int) string {
	tb.Helper()
	ws := tb.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(strings.Repeat("a line of notes\n", turns+50)), 0o644); err != nil {
		tb.Fatal(err)
	}
	return ws
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// replayIdentically replays recording and fails unless the replay has
// no divergence at all.
func replayIdentically(tb testing.TB, recording string, turns int) {
	tb.Helper()
	res, err := Run(tb.Context(), RunOptions{Recording: recording, Out: filepath.Join(tb.TempDir(), "replays"), Workspace: filepath.Join(tb.TempDir(), "ws")})
	if err != nil || !res.Report.Identical() || len(res.Report.Divergences) != 0 {
		var sb strings.Builder
		res.Report.Table(&sb)
		tb.Fatalf("replay of %s: %v\n%s", filepath.Base(recording), err, sb.String())
	}
	if res.End.Turns != turns+1 {
		tb.Fatalf("the replay ran %d turns, want %d", res.End.Turns, turns+1)
	}
}

// asV1 writes recording again as a v 1 file (every model_request with its
// full message_hashes list), as retrace wrote before v 2, and returns its
// path: what an old recording looks like.
func asV1(tb testing.TB, recording string) string {
	tb.Helper()
	evs, err := trajectory.ReadFile(recording)
	if err != nil {
		tb.Fatal(err)
	}
	full, err := trajectory.Full(evs)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	enc := trajectory.NewEncoder(w)
	for i, e := range evs {
		if r, ok := e.Payload.(*trajectory.ModelRequest); ok {
			v1 := *r
			v1.MessageHashes, v1.MessagesKept, v1.PrefixHash = full[i], 0, ""
			e.Payload = &v1
		}
		e.V = 1
		if err := enc.Encode(e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	// The copy shares the recording's name and, by a link, its blob store
	// (the workspace snapshot), which sits next to it.
	dir := tb.TempDir()
	path := filepath.Join(dir, filepath.Base(recording))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	blobs := strings.TrimSuffix(filepath.Base(recording), ".jsonl") + ".blobs"
	if err := os.Symlink(filepath.Join(filepath.Dir(recording), blobs), filepath.Join(dir, blobs)); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestATrajectoryGrowsLinearlyAndReplaysIdentically is issue 19's
// acceptance for linear trajectories: a 1000-turn session's file is within
// 2x of ten times a 100-turn one's, and it replays with no divergence; a
// session written as v 1 (full lists, quadratic) replays identically too,
// so old recordings keep working.
func TestATrajectoryGrowsLinearlyAndReplaysIdentically(t *testing.T) {
	if testing.Short() {
		t.Skip("records and replays a 1000-turn session")
	}
	sizes := map[int]int64{}
	recs := map[int]string{}
	for _, turns := range []int{100, 1000} {
		rec := runDirect(t, linearWorkspace(t, turns), filepath.Join(t.TempDir(), "runs"), turns)
		if rep, err := trajectory.ValidateFile(rec); err != nil || len(rep.Problems) != 0 {
			t.Fatalf("%d turns: %v %v", turns, err, rep.Problems)
		}
		sizes[turns], recs[turns] = fileSize(t, rec), rec
	}
	ratio := float64(sizes[1000]) / float64(sizes[100])
	t.Logf("100 turns: %d bytes, 1000 turns: %d bytes (x%.2f; linear is x10)", sizes[100], sizes[1000], ratio)
	if ratio > 20 {
		t.Fatalf("1000 turns are %.1fx the bytes of 100 turns; linear is 10x, the bar 20x", ratio)
	}
	replayIdentically(t, recs[1000], 1000)

	old := asV1(t, recs[100])
	if rep, err := trajectory.ValidateFile(old); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("v1 copy: %v %v", err, rep.Problems)
	}
	t.Logf("the same 100 turns as v 1: %d bytes (x%.1f of v 2)", fileSize(t, old), float64(fileSize(t, old))/float64(sizes[100]))
	replayIdentically(t, old, 100)
}

// BenchmarkTrajectoryGrowth records sessions of 100 and 1000 turns and
// reports the bytes per turn of each and the size ratio (linear: 10).
func BenchmarkTrajectoryGrowth(b *testing.B) {
	var sizes [2]int64
	for b.Loop() {
		for k, turns := range []int{100, 1000} {
			rec := runDirect(b, linearWorkspace(b, turns), filepath.Join(b.TempDir(), "runs"), turns)
			sizes[k] = fileSize(b, rec)
		}
	}
	b.ReportMetric(float64(sizes[0])/100, "bytes/turn@100")
	b.ReportMetric(float64(sizes[1])/1000, "bytes/turn@1000")
	b.ReportMetric(float64(sizes[1])/float64(sizes[0]), "size_1000/size_100")
}
