package synth_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	retracestats "github.com/retrace-dev/retrace/stats"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// toolTally counts one tool's calls over a corpus.
type toolTally struct {
	calls, successes int
	failures         map[trajectory.FailureKind]int
	durations        []float64 // tool_end duration_ms
}

func (t *toolTally) failed() int {
	n := 0
	for _, v := range t.failures {
		n += v
	}
	return n
}

func (t *toolTally) rate() float64 { return float64(t.failed()) / float64(t.calls) }

// ran counts the calls that ran: succeeded, or failed in the tool.
func (t *toolTally) ran() int {
	return t.successes + t.failures[trajectory.FailureToolError] + t.failures[trajectory.FailureTimeout] + t.failures[trajectory.FailureException]
}

// sessionEvents generates session i of opts in memory: its lines and events.
func sessionEvents(t testing.TB, opts synth.Options, i int) ([][]byte, []trajectory.Event, synth.SessionInfo) {
	t.Helper()
	var buf bytes.Buffer
	info, err := synth.WriteSession(&buf, opts, i)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	d := trajectory.NewDecoder(bytes.NewReader(buf.Bytes()), "session")
	var events []trajectory.Event
	for {
		ev, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	return lines, events, info
}

// tally generates opts' sessions in memory and counts per tool.
func tally(t testing.TB, opts synth.Options) map[string]*toolTally {
	t.Helper()
	out := map[string]*toolTally{}
	get := func(name string) *toolTally {
		if out[name] == nil {
			out[name] = &toolTally{failures: map[trajectory.FailureKind]int{}}
		}
		return out[name]
	}
	for i := range opts.Sessions {
		_, events, _ := sessionEvents(t, opts, i)
		for _, ev := range events {
			switch p := ev.Payload.(type) {
			case *trajectory.ToolCall:
				get(p.Tool).calls++
			case *trajectory.ToolSuccess:
				get(p.Tool).successes++
			case *trajectory.ToolFailure:
				get(p.Tool).failures[p.FailureKind]++
			case *trajectory.ToolEnd:
				tt := get(p.Tool)
				tt.durations = append(tt.durations, p.DurationMs)
			}
		}
	}
	return out
}

func TestShiftsMoveTheirQuantityByWhatTheyAskAt2000Sessions(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two corpora of 2000 sessions")
	}
	base := tally(t, synth.Options{Sessions: 2000, Seed: 1})
	shifted := tally(t, synth.Options{Sessions: 2000, Seed: 1, Shifts: []synth.Shift{
		{Tool: "bash", FailurePoints: 0.05}, {Tool: "read", TailFactor: 1.5}}})

	// bash: failures over all bash calls (the rate retrace metrics shows)
	// rise by 5 ± 1 points; among the calls that ran, by 5 ± 0.5.
	b, s := base["bash"], shifted["bash"]
	if b.calls != s.calls || b.ran() != s.ran() {
		t.Fatalf("bash calls %d → %d, ran %d → %d: a failure shift must not change which calls run", b.calls, s.calls, b.ran(), s.ran())
	}
	rise := s.rate() - b.rate()
	t.Logf("bash failure rate %.4f → %.4f (+%.2f points over %d calls)", b.rate(), s.rate(), 100*rise, b.calls)
	if rise < 0.04 || rise > 0.06 {
		t.Errorf("bash failure rate rose by %.2f points, want 5 ± 1", 100*rise)
	}
	ranRise := float64(b.successes-s.successes) / float64(b.ran())
	if math.Abs(ranRise-0.05) > 0.005 {
		t.Errorf("among bash calls that ran the failure rate rose by %.2f points, want 5 ± 0.5", 100*ranRise)
	}
	if s.failures[trajectory.FailurePermissionDenied] != b.failures[trajectory.FailurePermissionDenied] ||
		s.failures[trajectory.FailureTimeout] != b.failures[trajectory.FailureTimeout] {
		t.Errorf("bash failure kinds %v → %v: only tool_error may grow", b.failures, s.failures)
	}
	if bp, sp := retracestats.Quantile(b.durations, 0.95), retracestats.Quantile(s.durations, 0.95); bp != sp {
		t.Errorf("bash p95 %v → %v: a failure shift keeps durations", bp, sp)
	}

	// read: p95 ×1.5 ± 0.1, p50 within ±3%, failures as they were.
	b, s = base["read"], shifted["read"]
	p95 := retracestats.Quantile(s.durations, 0.95) / retracestats.Quantile(b.durations, 0.95)
	p50 := retracestats.Quantile(s.durations, 0.5) / retracestats.Quantile(b.durations, 0.5)
	t.Logf("read p95 ×%.3f, p50 ×%.3f over %d calls", p95, p50, len(b.durations))
	if math.Abs(p95-1.5) > 0.1 {
		t.Errorf("read p95 ×%.3f, want ×1.5 ± 0.1", p95)
	}
	if math.Abs(p50-1) > 0.03 {
		t.Errorf("read p50 ×%.3f, want within ±3%%", p50)
	}
	if b.failed() != s.failed() {
		t.Errorf("read failures %d → %d: a tail shift changes no outcome", b.failed(), s.failed())
	}

	// Every other tool: the same counts and durations.
	for name, bt := range base {
		if name == "bash" || name == "read" {
			continue
		}
		st := shifted[name]
		if bt.calls != st.calls || bt.failed() != st.failed() ||
			retracestats.Quantile(bt.durations, 0.5) != retracestats.Quantile(st.durations, 0.5) ||
			retracestats.Quantile(bt.durations, 0.95) != retracestats.Quantile(st.durations, 0.95) {
			t.Errorf("%s changed: %d calls %d failures → %d calls %d failures", name, bt.calls, bt.failed(), st.calls, st.failed())
		}
	}
}

// fields decodes a line into its top-level fields.
func fields(t *testing.T, line []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// differing returns the names of the fields two lines disagree on.
func differing(a, b map[string]json.RawMessage) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// only reports whether every name in got is one of allowed.
func only(got []string, allowed ...string) bool {
	for _, g := range got {
		ok := false
		for _, a := range allowed {
			ok = ok || g == a
		}
		if !ok {
			return false
		}
	}
	return true
}

func TestAFailureShiftChangesOnlyThePlantedCallsAndWhatCarriesThem(t *testing.T) {
	// Line by line, the same seed with and without bash.failure+0.05: a
	// planted call's tool_success becomes a tool_failure (tool_error) and
	// its tool_end and tool_result follow; the model_requests after it
	// carry the failed result (their messages, hashes and prefix hash); session_end
	// counts the failures. Every other line is byte for byte the same —
	// the same timestamps, the same later calls.
	opts := synth.Options{Sessions: 300, Seed: 11}
	shifted := opts
	shifted.Shifts = []synth.Shift{{Tool: "bash", FailurePoints: 0.05}}
	planted, reported := 0, 0
	for i := range opts.Sessions {
		bl, be, _ := sessionEvents(t, opts, i)
		sl, se, info := sessionEvents(t, shifted, i)
		reported += info.PlantedFailures
		if len(bl) != len(sl) {
			t.Fatalf("session %d: %d lines → %d", i, len(bl), len(sl))
		}
		flipped := map[string]bool{}
		for j := range bl {
			if bytes.Equal(bl[j], sl[j]) {
				continue
			}
			diff := differing(fields(t, bl[j]), fields(t, sl[j]))
			switch bp := be[j].Payload.(type) {
			case *trajectory.ToolSuccess:
				f, ok := se[j].Payload.(*trajectory.ToolFailure)
				if !ok || f.Tool != "bash" || f.FailureKind != trajectory.FailureToolError || f.ToolUseID != bp.ToolUseID || f.ErrorCode == "" {
					t.Fatalf("session %d line %d: %s became %s", i, j+1, bl[j], sl[j])
				}
				flipped[bp.ToolUseID] = true
				planted++
			case *trajectory.ToolEnd:
				if !flipped[bp.ToolUseID] || !only(diff, "output_bytes", "truncated", "spill") {
					t.Fatalf("session %d line %d: tool_end changed %v:\n%s%s", i, j+1, diff, bl[j], sl[j])
				}
			case *trajectory.ToolResult:
				if !flipped[bp.ToolUseID] || !only(diff, "text", "is_error") {
					t.Fatalf("session %d line %d: tool_result changed %v:\n%s%s", i, j+1, diff, bl[j], sl[j])
				}
			case *trajectory.ModelRequest:
				if len(flipped) == 0 || !only(diff, "new_messages", "message_hashes", "prefix_hash", "request_bytes") {
					t.Fatalf("session %d line %d: model_request changed %v", i, j+1, diff)
				}
			case *trajectory.SessionEnd:
				want := bp.ToolFailures + len(flipped)
				if got := se[j].Payload.(*trajectory.SessionEnd).ToolFailures; got != want || !only(diff, "tool_failures") {
					t.Fatalf("session %d: session_end changed %v, tool_failures %d, want %d", i, diff, got, want)
				}
			default:
				t.Fatalf("session %d line %d: a %s line changed %v:\n%s%s", i, j+1, be[j].Type(), diff, bl[j], sl[j])
			}
		}
	}
	if planted < 20 {
		t.Fatalf("%d failures planted in %d sessions; want a few dozen", planted, opts.Sessions)
	}
	if reported != planted {
		t.Errorf("SessionInfo.PlantedFailures sum to %d; %d tool_successes became failures", reported, planted)
	}
}

func TestATailShiftChangesOnlyTheToolsDurationsAndTheClock(t *testing.T) {
	// The same seed with and without read.p95*1.5. Read tool_ends above
	// the median report longer durations, none shorter, and the clock runs
	// on by as much: later timestamps and session_end's duration move, and
	// in a parallel batch a stretched read may now finish after a sibling,
	// so the batch's outcome lines come in another order (with the
	// PostToolUse hook runs, which follow that order). Everything else is
	// the same: every model request and response, every call and
	// permission decision, byte for byte but the timestamp; and with
	// timestamps, seqs and those durations set aside, the same lines.
	opts := synth.Options{Sessions: 300, Seed: 12}
	shifted := opts
	shifted.Shifts = []synth.Shift{{Tool: "read", TailFactor: 1.5}}
	longer, reordered := 0, 0
	for i := range opts.Sessions {
		bl, be, _ := sessionEvents(t, opts, i)
		sl, se, _ := sessionEvents(t, shifted, i)
		if len(bl) != len(sl) {
			t.Fatalf("session %d: %d lines → %d", i, len(bl), len(sl))
		}
		keys := map[string]int{}
		baseDur := map[string]float64{}
		for j := range bl {
			bf, sf := fields(t, bl[j]), fields(t, sl[j])
			switch be[j].Payload.(type) {
			case *trajectory.ModelRequest, *trajectory.ModelResponse, *trajectory.ToolCall, *trajectory.SessionStart,
				*trajectory.PermissionAllow, *trajectory.PermissionDeny, *trajectory.PermissionPrompt:
				if d := differing(bf, sf); !only(d, "ts") {
					t.Fatalf("session %d line %d: a %s line changed %v:\n%s%s", i, j+1, be[j].Type(), d, bl[j], sl[j])
				}
			}
			if e, ok := be[j].Payload.(*trajectory.ToolEnd); ok && e.Tool == "read" {
				baseDur[e.ToolUseID] = e.DurationMs
			}
			if be[j].Type() != se[j].Type() {
				reordered++
			}
			keys[maskedKey(t, be[j], bf)]++
			keys[maskedKey(t, se[j], sf)]--
		}
		for k, n := range keys {
			if n != 0 {
				t.Fatalf("session %d: %+d of %s", i, n, k)
			}
		}
		for _, ev := range se {
			if e, ok := ev.Payload.(*trajectory.ToolEnd); ok && e.Tool == "read" {
				switch b := baseDur[e.ToolUseID]; {
				case e.DurationMs < b:
					t.Fatalf("session %d: read %s ran %v ms, shorter than %v", i, e.ToolUseID, e.DurationMs, b)
				case e.DurationMs > b:
					longer++
				}
			}
		}
	}
	t.Logf("%d read durations stretched, %d lines in another order", longer, reordered)
	if longer < 100 {
		t.Fatalf("%d read durations stretched in %d sessions; want hundreds", longer, opts.Sessions)
	}
}

// maskedKey is an event's line without what a tail shift may move: the
// timestamp and seq, a read's duration, session_end's duration, a
// PostToolUse hook's draws (they follow the order calls finish in) and how
// long a call ran before a user interrupt.
func maskedKey(t *testing.T, ev trajectory.Event, f map[string]json.RawMessage) string {
	t.Helper()
	delete(f, "ts")
	delete(f, "seq")
	switch p := ev.Payload.(type) {
	case *trajectory.ToolEnd:
		if p.Tool == "read" {
			delete(f, "duration_ms")
		}
	case *trajectory.SessionEnd:
		delete(f, "duration_ms")
	case *trajectory.HookRun:
		if p.Phase == trajectory.HookPost {
			delete(f, "duration_ms")
			delete(f, "outcome")
			delete(f, "tool_use_id")
			delete(f, "tool")
		}
	case *trajectory.ToolResult:
		if strings.HasPrefix(p.Text, "Interrupted by the user after") {
			delete(f, "text")
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAShiftedCorpusPassesTheValidator(t *testing.T) {
	dir, _ := writeCorpus(t, synth.Options{Sessions: 150, Seed: 13,
		Shifts: []synth.Shift{{Tool: "bash", FailurePoints: 0.2, TailFactor: 2}, {Tool: "read", TailFactor: 3}, {Tool: "edit", FailurePoints: 0.1}}})
	if n := validate(t, dir); n != 150 {
		t.Fatalf("%d files, want 150", n)
	}
}

func TestParseShift(t *testing.T) {
	good := []struct {
		in   string
		want synth.Shift
	}{
		{"bash.failure+0.05", synth.Shift{Tool: "bash", FailurePoints: 0.05}},
		{"read.p95*1.5", synth.Shift{Tool: "read", TailFactor: 1.5}},
		{" mcp__github__search_issues.p95*2 ", synth.Shift{Tool: "mcp__github__search_issues", TailFactor: 2}},
		{"edit.failure+1", synth.Shift{Tool: "edit", FailurePoints: 1}},
	}
	for _, c := range good {
		got, err := synth.ParseShift(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseShift(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := synth.ParseShift(got.String()); err != nil || back != got {
			t.Errorf("ParseShift(%q.String() = %q) = %+v, %v", c.in, got.String(), back, err)
		}
	}
	bad := []struct{ in, mentions string }{
		{"", "TOOL.failure+POINTS"},
		{"bash", "TOOL.failure+POINTS"},
		{".failure+0.1", "TOOL.failure+POINTS"},
		{"bsh.failure+0.05", `"bsh": synth has no such tool`},
		{"bash.failure-0.05", "want +POINTS"},
		{"bash.failure+five", `"five" are not a number`},
		{"bash.failure+0", "above 0 and at most 1"},
		{"bash.failure+1.5", "above 0 and at most 1"},
		{"bash.failure+NaN", "above 0 and at most 1"},
		{"read.p95+1.5", "want *FACTOR"},
		{"read.p95*x", `"x" is not a number`},
		{"read.p95*0.5", "above 1 and at most 100"},
		{"read.p95*1", "above 1 and at most 100"},
		{"read.p95*Inf", "above 1 and at most 100"},
		{"read.p50*2", `"p50*2" is not one synth shifts`},
		{"todo_write.failure+0.1", "never fails in synth"},
	}
	for _, c := range bad {
		_, err := synth.ParseShift(c.in)
		if !errors.Is(err, synth.ErrInvalidOptions) || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("ParseShift(%q) error %v; want ErrInvalidOptions mentioning %q", c.in, err, c.mentions)
		}
	}
}

func TestOptionsWithBadShiftsAreRejected(t *testing.T) {
	for _, c := range []struct {
		shifts   []synth.Shift
		mentions string
	}{
		{[]synth.Shift{{Tool: "nope", FailurePoints: 0.1}}, "no such tool"},
		{[]synth.Shift{{Tool: "bash"}}, "changes nothing"},
		{[]synth.Shift{{Tool: "bash", FailurePoints: 0.1}, {Tool: "bash", FailurePoints: 0.2}}, "two failure shifts of bash"},
		{[]synth.Shift{{Tool: "read", TailFactor: 2}, {Tool: "read", TailFactor: 3}}, "two p95 shifts of read"},
	} {
		_, err := synth.WriteSession(io.Discard, synth.Options{Sessions: 1, Shifts: c.shifts}, 0)
		if !errors.Is(err, synth.ErrInvalidOptions) || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("shifts %+v: error %v; want ErrInvalidOptions mentioning %q", c.shifts, err, c.mentions)
		}
	}
	// A failure and a tail shift of one tool combine.
	if _, err := synth.WriteSession(io.Discard, synth.Options{Sessions: 1, Shifts: []synth.Shift{{Tool: "bash", FailurePoints: 0.1}, {Tool: "bash", TailFactor: 2}}}, 0); err != nil {
		t.Errorf("a failure and a tail shift of bash: %v", err)
	}
}

func FuzzParseShift(f *testing.F) {
	for _, s := range []string{"bash.failure+0.05", "read.p95*1.5", "x", "bash.", ".p95*2", "read.p95*1e309", "bash.failure+-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := synth.ParseShift(s)
		if err != nil {
			if !errors.Is(err, synth.ErrInvalidOptions) {
				t.Fatalf("ParseShift(%q) error %v does not wrap ErrInvalidOptions", s, err)
			}
			return
		}
		if _, err := synth.WriteSession(io.Discard, synth.Options{Sessions: 1, Shifts: []synth.Shift{sh}}, 0); err != nil {
			t.Fatalf("ParseShift(%q) = %+v, which Options reject: %v", s, sh, err)
		}
	})
}
