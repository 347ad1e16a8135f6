package synth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// writeCorpus writes a corpus to a fresh temporary directory.
func writeCorpus(t testing.TB, opts synth.Options) (string, synth.Report) {
	t.Helper()
	dir := t.TempDir()
	rep, err := synth.Write(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}

// validate checks every file of dir with the contract's own validator.
func validate(t *testing.T, dir string) int {
	t.Helper()
	files, err := trajectory.Expand(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rep, err := trajectory.ValidateFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("%v", p)
		}
		for _, w := range rep.Warnings {
			t.Errorf("warning: %v", w)
		}
		checkTimes(t, f)
	}
	return len(files)
}

// checkTimes holds what the validator does not check: timestamps that
// strictly increase, and a session_end whose duration is the session's.
func checkTimes(t *testing.T, file string) {
	t.Helper()
	events, err := trajectory.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(events); i++ {
		if !events[i].TS.After(events[i-1].TS) {
			t.Errorf("%s: seq %d at %v is not after seq %d at %v", file, events[i].Seq, events[i].TS, events[i-1].Seq, events[i-1].TS)
			return
		}
	}
	last := events[len(events)-1]
	end, ok := last.Payload.(*trajectory.SessionEnd)
	if want := trajectory.Millis(last.TS.Sub(events[0].TS)); !ok || end.DurationMs != want {
		t.Errorf("%s: the last event is %s; want session_end with duration_ms %v", file, last.Type(), want)
	}
}

func TestEveryFileOfALargeCorpusPassesTheValidator(t *testing.T) {
	dir, rep := writeCorpus(t, synth.Options{Sessions: 300, Seed: 7})
	if n := validate(t, dir); n != 300 || rep.Sessions != 300 {
		t.Fatalf("%d files, report says %d sessions; want 300", n, rep.Sessions)
	}
}

func TestCorporaOfManySeedsAreValid(t *testing.T) {
	for seed := range int64(20) {
		dir, _ := writeCorpus(t, synth.Options{Sessions: 50, Seed: seed, Days: 2})
		validate(t, dir)
		if t.Failed() {
			t.Fatalf("seed %d gave invalid sessions", seed)
		}
	}
}

// readDir returns every file of dir by name.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func TestTheSameOptionsGiveTheSameBytesWhateverTheWorkers(t *testing.T) {
	a, _ := writeCorpus(t, synth.Options{Sessions: 60, Seed: 3, Workers: 1})
	b, _ := writeCorpus(t, synth.Options{Sessions: 60, Seed: 3, Workers: 4})
	fa, fb := readDir(t, a), readDir(t, b)
	if len(fa) != 60 || len(fb) != 60 {
		t.Fatalf("got %d and %d files, want 60", len(fa), len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Fatalf("%s differs between two runs with the same seed", name)
		}
	}
	c, _ := writeCorpus(t, synth.Options{Sessions: 60, Seed: 4})
	same := 0
	for name := range readDir(t, c) {
		if _, ok := fa[name]; ok {
			same++
		}
	}
	if same == 60 {
		t.Fatal("seed 4 gave the same session ids as seed 3")
	}
}

func TestWriteSessionGivesTheBytesOfThatSessionsFile(t *testing.T) {
	opts := synth.Options{Sessions: 10, Seed: 11}
	dir, _ := writeCorpus(t, opts)
	var buf bytes.Buffer
	info, err := synth.WriteSession(&buf, opts, 7)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, info.ID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) || info.Bytes != len(want) {
		t.Fatalf("WriteSession gave %d bytes, the file holds %d, and they differ", buf.Len(), len(want))
	}
}

func TestOptionsThatDescribeNoCorpusAreRejected(t *testing.T) {
	cases := []struct {
		name  string
		opts  synth.Options
		index int
	}{
		{"zero sessions describe no corpus", synth.Options{}, 0},
		{"a negative number of days is meaningless", synth.Options{Sessions: 1, Days: -1}, 0},
		{"a negative number of workers is meaningless", synth.Options{Sessions: 1, Workers: -2}, 0},
		{"a negative number of turns is meaningless", synth.Options{Sessions: 1, Turns: -1}, 0},
		{"an index past the last session names no session", synth.Options{Sessions: 3}, 3},
		{"a fault synth has no planter for is refused", synth.Options{Sessions: 4, Faults: []string{"lost_call", "dead_defense"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := synth.WriteSession(io.Discard, tc.opts, tc.index); !errors.Is(err, synth.ErrInvalidOptions) {
				t.Fatalf("WriteSession: %v, want ErrInvalidOptions", err)
			}
			if tc.index == 0 {
				if _, err := synth.Write(context.Background(), t.TempDir(), tc.opts); !errors.Is(err, synth.ErrInvalidOptions) {
					t.Fatalf("Write: %v, want ErrInvalidOptions", err)
				}
			}
		})
	}
}

func TestWriteRefusesADirectoryThatHoldsRunsUnlessAskedToOverwrite(t *testing.T) {
	dir, _ := writeCorpus(t, synth.Options{Sessions: 3, Seed: 1})
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 3, Seed: 2}); !errors.Is(err, synth.ErrDirHasRuns) {
		t.Fatalf("second write: %v, want ErrDirHasRuns", err)
	}
	if len(readDir(t, dir)) != 3 {
		t.Fatal("the refused write changed the directory")
	}
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 3, Seed: 2, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(readDir(t, dir)); n != 6 {
		t.Fatalf("%d files after writing a second corpus of 3 into one of 3, want 6", n)
	}
}

func TestWriteCreatesTheDirectoryAndStopsWhenCancelled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := synth.Write(ctx, dir, synth.Options{Sessions: 1000, Seed: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if _, serr := os.Stat(dir); serr != nil || rep.Sessions == 1000 {
		t.Fatalf("stat %v, %d sessions written; want the directory created and the run stopped early", serr, rep.Sessions)
	}
}

// stats are counts over a corpus, read back from its files.
type stats struct {
	sessions     int
	events       int
	types        map[trajectory.EventType]int
	failureKinds map[trajectory.FailureKind]int
	errorCodes   map[string]int
	endReasons   map[trajectory.EndReason]int
	allowSources map[trajectory.PermissionSource]int
	denySources  map[trajectory.PermissionSource]int
	defenses     map[trajectory.DefenseName]int
	hookOutcomes map[trajectory.HookOutcome]int
	durations    map[string][]float64 // per tool, of calls that ran and succeeded
	days         map[string]bool
	turns        []int
	parallel     int // tool_calls in a batch of more than one
	truncated    int
	cacheRead    int64
	promptTokens int64
	growing      int // sessions whose last turn's prompt exceeds the first's
	multiTurn    int
}

func collect(t *testing.T, dir string) stats {
	t.Helper()
	s := stats{types: map[trajectory.EventType]int{}, failureKinds: map[trajectory.FailureKind]int{},
		errorCodes: map[string]int{}, endReasons: map[trajectory.EndReason]int{},
		allowSources: map[trajectory.PermissionSource]int{}, denySources: map[trajectory.PermissionSource]int{},
		defenses: map[trajectory.DefenseName]int{}, hookOutcomes: map[trajectory.HookOutcome]int{},
		durations: map[string][]float64{}, days: map[string]bool{}}
	r, err := trajectory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type callInfo struct {
		tool string
		ok   bool
	}
	var (
		calls   map[string]*callInfo
		batches map[int]int
		first   int64
		last    int64
	)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s.events++
		s.types[ev.Type()]++
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			s.sessions++
			s.days[ev.TS.Format("2006-01-02")] = true
			calls, first, last = map[string]*callInfo{}, 0, 0
		case *trajectory.ModelResponse:
			prompt := p.Usage.InputTokens + p.Usage.CacheReadTokens + p.Usage.CacheCreationTokens
			s.cacheRead += p.Usage.CacheReadTokens
			s.promptTokens += prompt
			if first == 0 {
				first = prompt
			}
			last = prompt
			batches = map[int]int{}
		case *trajectory.ToolCall:
			calls[p.ToolUseID] = &callInfo{tool: p.Tool}
			batches[p.Batch]++
			if batches[p.Batch] == 2 {
				s.parallel += 2
			} else if batches[p.Batch] > 2 {
				s.parallel++
			}
		case *trajectory.ToolSuccess:
			calls[p.ToolUseID].ok = true
		case *trajectory.ToolFailure:
			s.failureKinds[p.FailureKind]++
			s.errorCodes[p.ErrorCode]++
		case *trajectory.ToolEnd:
			if c := calls[p.ToolUseID]; c.ok {
				s.durations[c.tool] = append(s.durations[c.tool], p.DurationMs)
			}
			if p.Truncated && p.Spill != "" {
				s.truncated++
			}
		case *trajectory.PermissionAllow:
			s.allowSources[p.Source]++
		case *trajectory.PermissionDeny:
			s.denySources[p.Source]++
		case *trajectory.DefenseTrigger:
			s.defenses[p.Defense]++
		case *trajectory.HookRun:
			s.hookOutcomes[p.Outcome]++
		case *trajectory.SessionEnd:
			s.endReasons[p.Reason]++
			s.turns = append(s.turns, p.Turns)
			if p.Turns > 1 {
				s.multiTurn++
				if last > first {
					s.growing++
				}
			}
		}
	}
	return s
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// The distributions the package documentation promises, over 500 sessions.
func TestTheCorpusHasTheDistributionsItClaims(t *testing.T) {
	dir, rep := writeCorpus(t, synth.Options{Sessions: 500, Seed: 1})
	s := collect(t, dir)
	if int64(s.events) != rep.Events || s.sessions != 500 {
		t.Fatalf("read %d events in %d sessions, the report says %d events", s.events, s.sessions, rep.Events)
	}

	t.Run("every failure kind occurs and tool_error is the most common", func(t *testing.T) {
		for _, k := range []trajectory.FailureKind{trajectory.FailureToolError, trajectory.FailureNotFound, trajectory.FailurePermissionDenied,
			trajectory.FailureInvalidInput, trajectory.FailureTimeout, trajectory.FailureHookBlocked, trajectory.FailureAborted, trajectory.FailureException} {
			if s.failureKinds[k] == 0 {
				t.Errorf("no %s failure in 500 sessions: %v", k, s.failureKinds)
			}
			if k != trajectory.FailureToolError && s.failureKinds[k] >= s.failureKinds[trajectory.FailureToolError] {
				t.Errorf("%s (%d) is as common as tool_error (%d)", k, s.failureKinds[k], s.failureKinds[trajectory.FailureToolError])
			}
		}
		for _, rare := range []trajectory.FailureKind{trajectory.FailureException, trajectory.FailureAborted, trajectory.FailureHookBlocked} {
			if s.failureKinds[rare] >= s.failureKinds[trajectory.FailureNotFound] {
				t.Errorf("%s (%d) is not rarer than not_found (%d)", rare, s.failureKinds[rare], s.failureKinds[trajectory.FailureNotFound])
			}
		}
		for _, code := range []string{"exit:1", "ENOENT", "unknown_tool", "schema", "timeout"} {
			if s.errorCodes[code] == 0 {
				t.Errorf("error code %s never occurs: %v", code, s.errorCodes)
			}
		}
	})
	t.Run("reads are faster than grep, and grep faster than bash, at the median", func(t *testing.T) {
		read, grep, bash := median(s.durations["read"]), median(s.durations["grep"]), median(s.durations["bash"])
		if !(read < 5 && read < grep && grep < bash) {
			t.Fatalf("medians: read %.3f ms, grep %.3f ms, bash %.3f ms", read, grep, bash)
		}
		if p99 := slices.Max(s.durations["bash"]); p99 < 100*median(s.durations["bash"]) {
			t.Fatalf("bash has no long tail: max %.1f ms, median %.1f ms", p99, median(s.durations["bash"]))
		}
	})
	t.Run("sessions spread over several days", func(t *testing.T) {
		if len(s.days) < 7 {
			t.Fatalf("sessions start on %d days, want 7", len(s.days))
		}
	})
	t.Run("sessions vary in length from one turn to about thirty", func(t *testing.T) {
		if slices.Min(s.turns) != 1 || slices.Max(s.turns) < 25 || s.multiTurn < 400 {
			t.Fatalf("turns from %d to %d, %d sessions of more than one turn", slices.Min(s.turns), slices.Max(s.turns), s.multiTurn)
		}
	})
	t.Run("most sessions end with end_turn and every other planned ending occurs", func(t *testing.T) {
		if s.endReasons[trajectory.EndTurn] < 300 {
			t.Errorf("%d end_turn of 500", s.endReasons[trajectory.EndTurn])
		}
		for _, r := range []trajectory.EndReason{trajectory.EndMaxTurns, trajectory.EndTokenBudget, trajectory.EndAborted, trajectory.EndError} {
			if s.endReasons[r] == 0 {
				t.Errorf("no session ends with %s: %v", r, s.endReasons)
			}
		}
	})
	t.Run("permissions are decided along the whole chain", func(t *testing.T) {
		for _, src := range []trajectory.PermissionSource{trajectory.SourceReadOnly, trajectory.SourceRule, trajectory.SourceMode,
			trajectory.SourceSessionMemory, trajectory.SourceUser, trajectory.SourceHook} {
			if s.allowSources[src] == 0 {
				t.Errorf("no allow by %s: %v", src, s.allowSources)
			}
		}
		for _, src := range []trajectory.PermissionSource{trajectory.SourceRule, trajectory.SourceNonInteractive, trajectory.SourceUser, trajectory.SourceSafety} {
			if s.denySources[src] == 0 {
				t.Errorf("no deny by %s: %v", src, s.denySources)
			}
		}
		if s.allowSources[trajectory.SourceReadOnly] < s.allowSources[trajectory.SourceUser] {
			t.Errorf("fewer read-only allows than user allows: %v", s.allowSources)
		}
		if s.types[trajectory.TypePermissionPrompt] == 0 {
			t.Error("no permission prompt")
		}
	})
	t.Run("every defense acts somewhere, hooks run, and long sessions compact", func(t *testing.T) {
		for _, d := range []trajectory.DefenseName{trajectory.DefenseEmptyInputRetry, trajectory.DefenseEndTurnFallthrough,
			trajectory.DefenseTruncatedToolUse, trajectory.DefenseRepeatedReadOnly, trajectory.DefenseLowYieldSpin,
			trajectory.DefenseLoopDetection, trajectory.DefenseDenialFuse} {
			if s.defenses[d] == 0 {
				t.Errorf("defense %s never acts: %v", d, s.defenses)
			}
		}
		if s.types[trajectory.TypeReminder] == 0 || s.types[trajectory.TypeCompaction] == 0 || s.types[trajectory.TypeModelError] == 0 {
			t.Errorf("reminders %d, compactions %d, model errors %d; want some of each", s.types[trajectory.TypeReminder],
				s.types[trajectory.TypeCompaction], s.types[trajectory.TypeModelError])
		}
		if s.hookOutcomes[trajectory.HookContinue] == 0 || s.hookOutcomes[trajectory.HookBlock] == 0 || s.hookOutcomes[trajectory.HookContinue] < 10*s.hookOutcomes[trajectory.HookBlock] {
			t.Errorf("hook outcomes %v; want mostly continue and some block", s.hookOutcomes)
		}
	})
	t.Run("parallel batches, truncated outputs and a warm prompt cache", func(t *testing.T) {
		if s.parallel == 0 || s.truncated == 0 {
			t.Errorf("%d calls in parallel batches, %d truncated and spilled; want some of each", s.parallel, s.truncated)
		}
		if share := float64(s.cacheRead) / float64(s.promptTokens); share < 0.5 {
			t.Errorf("cache reads are %.0f%% of prompt tokens; want most", share*100)
		}
		if s.growing < s.multiTurn*8/10 {
			t.Errorf("the prompt grows in %d of %d multi-turn sessions", s.growing, s.multiTurn)
		}
	})
}

func TestSessionIDsHaveTheRecordersFormAndSortByStart(t *testing.T) {
	dir, rep := writeCorpus(t, synth.Options{Sessions: 40, Seed: 5, Start: time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC), Days: 3})
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range readDir(t, dir) {
			if !yield(n) {
				return
			}
		}
	})
	var prev time.Time
	for _, n := range names {
		id := strings.TrimSuffix(n, ".jsonl")
		ts, err := time.Parse("20060102-150405.000", id[:19])
		if err != nil || len(id) != 28 || id[19] != '-' {
			t.Fatalf("session id %q is not YYYYMMDD-HHMMSS.mmm-xxxxxxxx: %v", id, err)
		}
		if ts.Before(prev) {
			t.Fatalf("%s starts before the previous session", id)
		}
		prev = ts
	}
	if rep.First.Before(time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)) || !rep.Last.Before(time.Date(2027, 1, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("sessions start from %v to %v, want within the 3 days from 2027-01-04", rep.First, rep.Last)
	}
}

// The catalog in session_start must be the runtime's: the same built-in
// tools in the same order, with the same read-only and display declarations.
func TestTheToolCatalogMatchesTheRuntimesBuiltins(t *testing.T) {
	var buf bytes.Buffer
	if _, err := synth.WriteSession(&buf, synth.Options{Sessions: 1}, 0); err != nil {
		t.Fatal(err)
	}
	ev, err := trajectory.NewDecoder(&buf, "s").Next()
	if err != nil {
		t.Fatal(err)
	}
	catalog := ev.Payload.(*trajectory.SessionStart).Tools
	for i, tool := range tools.Builtins() {
		spec := tool.Spec()
		if i >= len(catalog) {
			t.Fatalf("the catalog lacks %s", spec.Name)
		}
		got := catalog[i]
		if got.Name != spec.Name || got.ReadOnly != spec.ReadOnly || got.Display != spec.Display || got.Deferred != spec.Deferred {
			t.Errorf("catalog[%d] = %+v, the runtime declares %s read_only=%v display=%s deferred=%v",
				i, got, spec.Name, spec.ReadOnly, spec.Display, spec.Deferred)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	var events int64
	for b.Loop() {
		dir := b.TempDir()
		rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 200, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		events += rep.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkGenerate measures generation alone, without the file system.
func BenchmarkGenerate(b *testing.B) {
	opts := synth.Options{Sessions: 1 << 30, Seed: 1}
	var events, i int64
	for b.Loop() {
		info, err := synth.WriteSession(io.Discard, opts, int(i))
		if err != nil {
			b.Fatal(err)
		}
		events += int64(info.Events)
		i++
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// A planted corpus is the clean corpus of the same options with every
// second session changed: the sessions the ground truth names differ from
// their clean selves and the others are the same bytes, whatever the
// workers.
func TestFaultsChangeOnlyThePlantedSessions(t *testing.T) {
	// 320 sessions give each of the 21 faults about seven tries:
	// denial_loop, which must find a session that looped, and
	// context_runaway, which needs a long one, need them.
	const n = 320
	clean, _ := writeCorpus(t, synth.Options{Sessions: n, Seed: 5})
	one, rep := writeCorpus(t, synth.Options{Sessions: n, Seed: 5, Faults: synth.Faults, Workers: 1})
	four, _ := writeCorpus(t, synth.Options{Sessions: n, Seed: 5, Faults: synth.Faults, Workers: 4})
	fc, f1, f4 := readDir(t, clean), readDir(t, one), readDir(t, four)
	planted := map[string]bool{}
	for _, f := range rep.Faults {
		planted[f.File] = true
		if f.Line < 1 || int64(f.Line) != f.Seq || f.Session+".jsonl" != f.File {
			t.Errorf("fault %+v: want line = seq >= 1 in the session's own file", f)
		}
	}
	if len(planted) == 0 || len(planted) > n/2 {
		t.Fatalf("%d sessions planted, want 1 to %d (every second one at most)", len(planted), n/2)
	}
	delete(f1, synth.FaultsFile)
	for name, data := range f1 {
		if !bytes.Equal(data, f4[name]) {
			t.Errorf("%s differs between 1 and 4 workers", name)
		}
		if same := bytes.Equal(data, fc[name]); same == planted[name] {
			t.Errorf("%s: planted %v, but same as the clean corpus %v", name, planted[name], same)
		}
	}
	truth, err := os.ReadFile(filepath.Join(one, synth.FaultsFile))
	if err != nil || bytes.Count(truth, []byte("\n")) != len(rep.Faults) {
		t.Fatalf("%s: %d lines, err %v; want one per planted fault (%d)", synth.FaultsFile, bytes.Count(truth, []byte("\n")), err, len(rep.Faults))
	}
}

func TestACorpusTooSmallForAFaultIsAnError(t *testing.T) {
	// Session 0 is never planted, so one session has room for none.
	_, err := synth.Write(context.Background(), t.TempDir(), synth.Options{Sessions: 1, Faults: []string{"lost_call"}})
	if !errors.Is(err, synth.ErrFaultNotPlanted) || !strings.Contains(err.Error(), "lost_call") {
		t.Fatalf("Write: %v, want ErrFaultNotPlanted naming lost_call", err)
	}
}

// Options.Turns plans every session's length: the sessions that end as
// planned (end_turn) last exactly that many turns, past the drawn 40 at
// most, and none runs longer.
func TestTurnsPlansEverySessionsLength(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 20, Seed: 3, Turns: 50}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	planned := 0
	for _, f := range files {
		events, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		end := events[len(events)-1].Payload.(*trajectory.SessionEnd)
		switch {
		case end.Turns > 50:
			t.Errorf("%s: %d turns, past the planned 50", f, end.Turns)
		case end.Reason == trajectory.EndTurn && end.Turns != 50:
			t.Errorf("%s: ended as planned after %d turns, want 50", f, end.Turns)
		case end.Turns == 50:
			planned++
		}
	}
	if planned < 10 {
		t.Errorf("only %d of 20 sessions last the planned 50 turns", planned)
	}
}
