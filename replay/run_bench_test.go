package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sessionOfTurns is a script of n turns of small distinct reads and a
// final answer.
func sessionOfTurns(n int) []byte {
	var b bytes.Buffer
	b.WriteString("turns:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - content: [{tool_use: {id: toolu_%d, name: read, input: {file_path: notes.txt, offset: %d, limit: 1}}}]\n", i, i+1)
	}
	b.WriteString("  - content: [{text: done}]\n")
	return b.Bytes()
}

// runDirect runs the scripted session through the session builder,
// recording to runs with a workspace snapshot, as retrace run does.
func runDirect(tb testing.TB, ws, runs string, turns int) string {
	tb.Helper()
	return recordSession(tb, recordOpts{script: sessionOfTurns(turns), name: "bench", ws: ws, maxTurns: turns + 100,
		prompt: "Read the notes line by line.", runs: runs})
}

// benchmarkReplay replays a recorded session of the given turns through
// the session builder and the real runtime and compares it, against
// running the same session directly (same tool calls, same recording). It
// reports the replay's time and the replay/direct ratio; the target is at
// most 1.3.
func benchmarkReplay(b *testing.B, turns int) {
	ws := b.TempDir()
	lines := strings.Repeat("a line of notes\n", turns+50)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(lines), 0o644); err != nil {
		b.Fatal(err)
	}
	recording := runDirect(b, ws, filepath.Join(b.TempDir(), "runs"), turns)
	var direct, replayed time.Duration
	for b.Loop() {
		start := time.Now()
		runDirect(b, ws, filepath.Join(b.TempDir(), "runs"), turns)
		direct += time.Since(start)
		start = time.Now()
		res, err := Run(b.Context(), RunOptions{Recording: recording, Out: filepath.Join(b.TempDir(), "replays"), Workspace: filepath.Join(b.TempDir(), "ws")})
		replayed += time.Since(start)
		if err != nil || !res.Report.Identical() {
			var sb strings.Builder
			res.Report.Table(&sb)
			b.Fatalf("replay: %v\n%s", err, sb.String())
		}
		if res.End.Turns != turns+1 {
			b.Fatalf("the replay ran %d turns, want %d", res.End.Turns, turns+1)
		}
	}
	b.ReportMetric(float64(replayed.Milliseconds())/float64(b.N), "ms/replay")
	b.ReportMetric(float64(replayed)/float64(direct), "replay/direct")
}

// BenchmarkReplay50Turns is issue 13's unit: one recorded 50-turn session.
func BenchmarkReplay50Turns(b *testing.B) { benchmarkReplay(b, 50) }

// BenchmarkReplay200Turns is a long session, where the comparison's cost
// grows with the history.
func BenchmarkReplay200Turns(b *testing.B) { benchmarkReplay(b, 200) }
