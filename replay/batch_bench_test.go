package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
)

// session50 is a 50-turn script: small distinct reads, and every tenth
// turn a read-only bash command, so a real process runs too.
func session50(n int) []byte {
	var b bytes.Buffer
	b.WriteString("turns:\n")
	for i := range 49 {
		if i%10 == 9 {
			fmt.Fprintf(&b, "  - content: [{tool_use: {id: toolu_%d, name: bash, input: {command: \"wc -l notes.txt\"}}}]\n", i)
			continue
		}
		fmt.Fprintf(&b, "  - content: [{tool_use: {id: toolu_%d, name: read, input: {file_path: notes.txt, offset: %d, limit: 1}}}]\n", i, (i+n)%200+1)
	}
	b.WriteString("  - content: [{text: done}]\n")
	return b.Bytes()
}

// run50 runs the n-th 50-turn session directly through the loop in ws,
// recording into runs with a workspace snapshot, as retrace run does.
func run50(tb testing.TB, n int, ws, runs string) string {
	tb.Helper()
	script, err := mockllm.ParseScript(session50(n), "bench")
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
	res, err := agent.Run(tb.Context(), agent.Config{Provider: script, Sink: rec, Prompt: fmt.Sprintf("Read the notes, session %d.", n),
		Limits: agent.Limits{MaxTurns: 60}, WorkspaceSnapshot: ref,
		Executor: executor.Config{Env: env, Permission: perm, Blobs: blobs, SessionID: rec.SessionID()}})
	if _, cerr := rec.Close(); err != nil || cerr != nil || res.Turns != 50 {
		tb.Fatalf("direct run %d: %v %v, %d turns, %s (%v)", n, err, cerr, res.Turns, res.Reason, res.Err)
	}
	return rec.Path()
}

// runAll runs the 100 sessions directly, jobs at a time, as a batch
// replay runs their replays.
func runAll(tb testing.TB, workspaces []string, runs string, jobs int) []string {
	paths := make([]string, len(workspaces))
	next := make(chan int)
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for i := range next {
				paths[i] = run50(tb, i, workspaces[i], runs)
			}
		})
	}
	for i := range workspaces {
		next <- i
	}
	close(next)
	wg.Wait()
	return paths
}

// BenchmarkBatchReplay100Sessions replays 100 recorded 50-turn sessions
// as one batch (-j one per CPU) and, in the same iteration, runs the same
// 100 sessions directly with the same parallelism. It reports the batch's
// sessions/s and the replay/direct time ratio; the target is at most 1.3.
func BenchmarkBatchReplay100Sessions(b *testing.B) {
	const sessions = 100
	jobs := runtime.NumCPU()
	notes := strings.Repeat("a line of notes\n", 250)
	workspaces := make([]string, sessions)
	for i := range workspaces {
		workspaces[i] = filepath.Join(b.TempDir(), fmt.Sprint(i))
		if err := os.MkdirAll(workspaces[i], 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(workspaces[i], "notes.txt"), []byte(notes), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	recordings := runAll(b, workspaces, filepath.Join(b.TempDir(), "runs"), jobs)
	var direct, replayed time.Duration
	for b.Loop() {
		start := time.Now()
		runAll(b, workspaces, filepath.Join(b.TempDir(), "runs"), jobs)
		direct += time.Since(start)
		start = time.Now()
		batch, err := RunBatch(b.Context(), BatchOptions{Recordings: recordings, Jobs: jobs, Run: RunOptions{Out: filepath.Join(b.TempDir(), "replays")}})
		replayed += time.Since(start)
		if err != nil || batch.Identical != sessions {
			var sb strings.Builder
			batch.Table(&sb)
			b.Fatalf("batch replay: %v\n%s", err, sb.String())
		}
	}
	b.ReportMetric(float64(sessions*b.N)/replayed.Seconds(), "sessions/s")
	b.ReportMetric(float64(sessions*b.N)/direct.Seconds(), "direct-sessions/s")
	b.ReportMetric(float64(replayed)/float64(direct), "replay/direct")
}
