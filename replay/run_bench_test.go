package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
)

// session200 is a 200-turn script of small distinct reads.
func session200() []byte {
	var b bytes.Buffer
	b.WriteString("turns:\n")
	for i := range 200 {
		fmt.Fprintf(&b, "  - content: [{tool_use: {id: toolu_%d, name: read, input: {file_path: notes.txt, offset: %d, limit: 1}}}]\n", i, i+1)
	}
	b.WriteString("  - content: [{text: done}]\n")
	return b.Bytes()
}

// runDirect runs the scripted session through the loop, recording to dir
// with a workspace snapshot, as retrace run does.
func runDirect(tb testing.TB, ws, runs string) string {
	tb.Helper()
	script, err := mockllm.ParseScript(session200(), "bench")
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		tb.Fatal(err)
	}
	env, err := tools.NewEnv(ws, reg)
	if err != nil {
		tb.Fatal(err)
	}
	perm, err := permission.New(permission.Config{}, env.Workspace())
	if err != nil {
		tb.Fatal(err)
	}
	rec, err := recorder.Create(runs, recorder.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(rec.Path()))
	ref, _, err := recorder.SnapshotWorkspace(env.Workspace(), blobs, recorder.SnapshotOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := agent.Run(tb.Context(), agent.Config{Provider: script, Sink: rec, Prompt: "Read the notes line by line.",
		Limits: agent.Limits{MaxTurns: 300}, WorkspaceSnapshot: ref,
		Executor: executor.Config{Env: env, Permission: perm, Blobs: blobs, SessionID: rec.SessionID()}})
	if _, cerr := rec.Close(); err != nil || cerr != nil || res.Turns != 201 {
		tb.Fatalf("direct run: %v %v, %d turns, %s (%v)", err, cerr, res.Turns, res.Reason, res.Err)
	}
	return rec.Path()
}

// BenchmarkReplay200Turns replays a recorded 200-turn session through the
// real runtime and compares it, against running the same session directly
// (same tool calls, same recording). It reports the replay's time and the
// replay/direct ratio; the target is at most 1.3.
func BenchmarkReplay200Turns(b *testing.B) {
	ws := b.TempDir()
	lines := strings.Repeat("a line of notes\n", 250)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(lines), 0o644); err != nil {
		b.Fatal(err)
	}
	recording := runDirect(b, ws, filepath.Join(b.TempDir(), "runs"))
	var direct, replayed time.Duration
	for b.Loop() {
		start := time.Now()
		runDirect(b, ws, filepath.Join(b.TempDir(), "runs"))
		direct += time.Since(start)
		start = time.Now()
		res, err := Run(b.Context(), RunOptions{Recording: recording, Out: filepath.Join(b.TempDir(), "replays"), Workspace: filepath.Join(b.TempDir(), "ws")})
		replayed += time.Since(start)
		if err != nil || !res.Report.Identical() {
			var sb strings.Builder
			res.Report.Table(&sb)
			b.Fatalf("replay: %v\n%s", err, sb.String())
		}
	}
	b.ReportMetric(float64(replayed.Milliseconds())/float64(b.N), "ms/replay")
	b.ReportMetric(float64(replayed)/float64(direct), "replay/direct")
}
