package agent

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestScriptedSessions runs every scripted scenario and checks how it
// ended and which defenses acted, in the order they acted.
func TestScriptedSessions(t *testing.T) {
	headlessDefault := func(c *Config) {
		perm, err := permission.New(permission.Config{Home: t.TempDir()}, c.Executor.Env.Workspace())
		if err != nil {
			t.Fatal(err)
		}
		c.Executor.Permission, c.PermissionMode = perm, trajectory.PermDefault
	}
	enableLoopDetection := func(c *Config) { c.Defenses = append(DefaultDefenses(), trajectory.DefenseLoopDetection) }
	cases := []struct {
		name     string
		script   string
		cfg      func(*Config)
		reason   trajectory.EndReason
		code     string
		turns    int
		defenses map[trajectory.DefenseName]string // defense → actions in order
		// verify: the script is used up with every expectation met.
		verify bool
	}{
		{name: "A clean session reads, writes and answers without any defense acting.",
			script: "clean", verify: true, reason: trajectory.EndTurn, turns: 3},
		{name: "A read with empty input is replaced by a note and retried once with a reminder.",
			script: "empty_input", verify: true, reason: trajectory.EndTurn, turns: 3,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseEmptyInputRetry: "retry"}},
		{name: "A third empty-input call in a session stops it as stuck after two retries.",
			script: "empty_input_stuck", verify: true, reason: trajectory.EndStuck, turns: 3,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseEmptyInputRetry: "retry,retry,stop"}},
		{name: "The same reminder twice in one turn is sent once and the duplicate is suppressed.",
			script: "reminder_cap", verify: true, reason: trajectory.EndTurn, turns: 2,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseEmptyInputRetry: "retry,retry", trajectory.DefenseReminderCap: "suppress"}},
		{name: "An end_turn reply that still holds a tool_use runs the call anyway.",
			script: "end_turn_fallthrough", verify: true, reason: trajectory.EndTurn, turns: 2,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseEndTurnFallthrough: "execute"}},
		{name: "A tool_use cut off by max_tokens is skipped and the model retries with a smaller input.",
			script: "truncated", verify: true, reason: trajectory.EndTurn, turns: 3,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseTruncatedToolUse: "skip"}},
		{name: "A reply without a stop reason ends the session as an error, not as done.",
			script: "missing_stop", verify: true, reason: trajectory.EndError, code: "stop_missing", turns: 1},
		{name: "A reply with an unknown stop reason ends as an error and its tool_use is not run.",
			script: "unknown_stop", verify: true, reason: trajectory.EndError, code: "stop_unknown", turns: 1},
		{name: "A refusal ends the session as refused.",
			script: "refusal", verify: true, reason: trajectory.EndRefused, turns: 1},
		{name: "A failed model call ends the session as an error labelled by its kind.",
			script: "server_error", reason: trajectory.EndError, code: "model_server_error", turns: 1},
		{name: "The turn limit ends a session that is still working.",
			script: "max_turns", verify: true, cfg: func(c *Config) { c.Limits.MaxTurns = 3 }, reason: trajectory.EndMaxTurns, turns: 3},
		{name: "The same read with the same output reminds twice and then stops the session as stuck.",
			script: "repeated_readonly", verify: true, reason: trajectory.EndStuck, turns: 9,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseRepeatedReadOnly: "remind,remind,stop"}},
		{name: "Reading a file again after changing it is not a repeated read.",
			script: "repeated_readonly_clean", verify: true, reason: trajectory.EndTurn, turns: 5},
		{name: "The same command returning the same lone number twice gets a low-yield reminder.",
			script: "low_yield", verify: true, reason: trajectory.EndTurn, turns: 3,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseLowYieldSpin: "remind"}},
		{name: "The same command returning lines, not a number, is no low-yield spin.",
			script: "low_yield_clean", verify: true, reason: trajectory.EndTurn, turns: 3},
		{name: "Five greps of one shape with loop detection on get a reminder and the session continues.",
			script: "loop_shape", verify: true, cfg: enableLoopDetection, reason: trajectory.EndTurn, turns: 6,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseLoopDetection: "continue"}},
		{name: "Five greps of one shape with the default defenses fire nothing, as loop detection is off.",
			script: "loop_shape", verify: true, reason: trajectory.EndTurn, turns: 6},
		{name: "Three denials of the same command in a headless session trip the executor's denial fuse.",
			script: "denial_fuse", verify: true, cfg: headlessDefault, reason: trajectory.EndTurn, turns: 4,
			defenses: map[trajectory.DefenseName]string{trajectory.DefenseDenialFuse: "needs_confirmation"}},
		{name: "The same three denials with the denial_fuse defense off trip nothing: the fuse is off in the checker too.",
			script: "denial_fuse", verify: true, cfg: func(c *Config) {
				headlessDefault(c)
				c.Defenses = slices.DeleteFunc(DefaultDefenses(), func(d trajectory.DefenseName) bool { return d == trajectory.DefenseDenialFuse })
			}, reason: trajectory.EndTurn, turns: 4},
		{name: "The token budget ends the session before the next request.",
			script: "max_turns", cfg: func(c *Config) { c.Limits.TokenBudget = 1 }, reason: trajectory.EndTokenBudget, turns: 1},
		{name: "The cost budget, at the configured prices, ends the session before the next request.",
			script: "max_turns", cfg: func(c *Config) {
				c.Limits.CostBudget = 0.000001
				c.Limits.Prices = Prices{Input: 3, Output: 15}
			}, reason: trajectory.EndCostBudget, turns: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runScript(t, tc.script, runOpts{cfg: tc.cfg, verify: tc.verify})
			end := sessionEnd(t, r.events)
			if r.res.Reason != tc.reason || end.Reason != tc.reason {
				t.Errorf("end reason: result %s, session_end %s; want %s (err %v)", r.res.Reason, end.Reason, tc.reason, r.res.Err)
			}
			if end.ErrorCode != tc.code || r.res.ErrorCode != tc.code {
				t.Errorf("error code %q, want %q", end.ErrorCode, tc.code)
			}
			if end.Turns != tc.turns {
				t.Errorf("turns %d, want %d", end.Turns, tc.turns)
			}
			for _, d := range []trajectory.DefenseName{trajectory.DefenseEmptyInputRetry, trajectory.DefenseEndTurnFallthrough,
				trajectory.DefenseTruncatedToolUse, trajectory.DefenseRepeatedReadOnly, trajectory.DefenseLowYieldSpin,
				trajectory.DefenseLoopDetection, trajectory.DefenseDenialFuse, trajectory.DefenseReminderCap} {
				if got, want := joined(triggers(r.events, d)), tc.defenses[d]; got != want {
					t.Errorf("defense %s acted %q, want %q", d, got, want)
				}
			}
			// A reminder is recorded exactly when one is sent, and each is labelled.
			for _, rm := range payloads[*trajectory.Reminder](r.events) {
				if rm.Role != trajectory.RoleUser || rm.Kind == "" {
					t.Errorf("reminder %+v", rm)
				}
			}
		})
	}
}

func TestTheCleanSessionInjectsNoReminder(t *testing.T) {
	r := runScript(t, "clean", runOpts{verify: true})
	if n := len(payloads[*trajectory.Reminder](r.events)); n != 0 {
		t.Errorf("%d reminders in a clean session", n)
	}
	if r.res.ToolCalls != 2 || r.res.ToolFailures != 0 {
		t.Errorf("calls %d failures %d, want 2 and 0", r.res.ToolCalls, r.res.ToolFailures)
	}
	if r.res.Text != "Done: NOTES.md summarises the README." {
		t.Errorf("text %q", r.res.Text)
	}
}

func TestATruncatedToolUseIsNeverExecutedNorSentBack(t *testing.T) {
	r := runScript(t, "truncated", runOpts{verify: true})
	for _, c := range payloads[*trajectory.ToolCall](r.events) {
		if c.ToolUseID == "toolu_big" {
			t.Error("the cut-off write was executed")
		}
	}
	for _, req := range payloads[*trajectory.ModelRequest](r.events) {
		for _, m := range req.NewMessages {
			for _, b := range m.Content {
				if b.ID == "toolu_big" {
					t.Error("the cut-off tool_use was sent back to the model")
				}
			}
		}
	}
}

func TestHarnessRemindersAreLabelledInTheMessagesSent(t *testing.T) {
	r := runScript(t, "empty_input", runOpts{verify: true})
	found := false
	for _, req := range payloads[*trajectory.ModelRequest](r.events) {
		for _, m := range req.NewMessages {
			for _, b := range m.Content {
				if m.Role == trajectory.RoleUser && strings.Contains(b.Text, "call it again") {
					found = true
					if !strings.HasPrefix(b.Text, "<harness-reminder>") || !strings.HasSuffix(b.Text, "</harness-reminder>") {
						t.Errorf("reminder sent unlabelled: %q", b.Text)
					}
				}
			}
		}
	}
	if !found {
		t.Error("the empty-input reminder was never sent")
	}
}

func TestAnAbortWhileBashRunsEndsTheSessionAsAborted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the call is under way, as a SIGINT handler would.
	time.AfterFunc(300*time.Millisecond, cancel)
	r := runScript(t, "abort", runOpts{ctx: ctx, verify: true})
	if r.res.Reason != trajectory.EndAborted {
		t.Fatalf("reason %s, want aborted (err %v)", r.res.Reason, r.res.Err)
	}
	if n := len(payloads[*trajectory.ModelRequest](r.events)); n != 1 {
		t.Errorf("%d model requests, want 1: the model must not be asked again after an abort", n)
	}
	fails := payloads[*trajectory.ToolFailure](r.events)
	if len(fails) != 1 || fails[0].ToolUseID != "toolu_sleep" || fails[0].FailureKind != trajectory.FailureAborted {
		t.Fatalf("failures %+v, want one aborted failure for the sleep", fails)
	}
	if end := sessionEnd(t, r.events); end.Reason != trajectory.EndAborted || end.ToolFailures != 1 {
		t.Errorf("session_end %+v", end)
	}
}

func TestEndReasonsAreAttributedByPriority(t *testing.T) {
	cases := []struct {
		name              string
		explicit          trajectory.EndReason
		aborted, maxTurns bool
		want              trajectory.EndReason
	}{
		{"An explicit reason wins over an abort and the turn limit.", trajectory.EndStuck, true, true, trajectory.EndStuck},
		{"An abort wins over the turn limit.", "", true, true, trajectory.EndAborted},
		{"The turn limit wins over an error.", "", false, true, trajectory.EndMaxTurns},
		{"With nothing else known the session ended in error.", "", false, false, trajectory.EndError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := attribute(tc.explicit, tc.aborted, tc.maxTurns); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAFailedModelCallIsRecordedAsAModelError(t *testing.T) {
	r := runScript(t, "server_error", runOpts{})
	errs := payloads[*trajectory.ModelError](r.events)
	if len(errs) != 1 || errs[0].ErrorKind != trajectory.ModelServerError || errs[0].StatusCode != 500 || errs[0].Attempt != 1 {
		t.Fatalf("model errors %+v", errs)
	}
	if r.res.Err == nil {
		t.Error("the result carries no error")
	}
}

func TestAStreamedSessionEndsLikeACompletedOne(t *testing.T) {
	var deltas []string
	r := runScript(t, "clean", runOpts{verify: true, cfg: func(c *Config) {
		c.Stream = true
		c.OnStream = func(e llm.StreamEvent) {
			if e.TextDelta != "" {
				deltas = append(deltas, e.TextDelta)
			}
		}
	}})
	if r.res.Reason != trajectory.EndTurn {
		t.Fatalf("reason %s", r.res.Reason)
	}
	if len(deltas) == 0 {
		t.Error("no text reached OnStream")
	}
	for _, req := range payloads[*trajectory.ModelRequest](r.events) {
		if !req.Stream {
			t.Error("a request is not marked as streamed")
		}
	}
}

func TestSessionStartRecordsTheCatalogDefensesAndLimits(t *testing.T) {
	r := runScript(t, "clean", runOpts{verify: true, cfg: func(c *Config) { c.Limits.MaxTurns = 10 }})
	start := payloads[*trajectory.SessionStart](r.events)[0]
	if len(start.Tools) != len(tools.Builtins()) {
		t.Errorf("catalog has %d tools, want %d", len(start.Tools), len(tools.Builtins()))
	}
	for _, d := range start.Defenses {
		if d == trajectory.DefenseLoopDetection {
			t.Error("loop detection is on by default")
		}
	}
	if start.Limits == nil || start.Limits.MaxTurns != 10 {
		t.Errorf("limits %+v", start.Limits)
	}
}

func TestAConfigWithoutProviderOrSinkIsRefusedBeforeAnythingIsRecorded(t *testing.T) {
	_, err := Run(t.Context(), Config{})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v, want ErrConfig", err)
	}
	for _, want := range []string{"Provider", "Sink", "Executor.Env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

// TestARealProviderRecordsEveryFailedAttempt points the real Anthropic
// client at the mock server: the first attempt fails with 529, the retry
// succeeds, and both the failure and the reply are in the trajectory.
func TestARealProviderRecordsEveryFailedAttempt(t *testing.T) {
	script, err := mockllm.ParseScript([]byte("turns:\n  - fault: {status: 529}\n    content: [{text: done}]\n"), "overloaded")
	if err != nil {
		t.Fatal(err)
	}
	url := startMock(t, script)
	retries := &Retries{}
	prov, err := llm.NewAnthropic(llm.Options{BaseURL: url, APIKey: "test", Model: "mock-1", OnRetry: retries.OnRetry})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, t.TempDir(), script, rec)
	cfg.Provider, cfg.Model, cfg.Retries = prov, "mock-1", retries
	res, evs := runRecorded(t, cfg, rec, &buf)
	if res.Reason != trajectory.EndTurn {
		t.Fatalf("reason %s (%v)", res.Reason, res.Err)
	}
	errs := payloads[*trajectory.ModelError](evs)
	if len(errs) != 1 || errs[0].ErrorKind != trajectory.ModelOverloaded || !errs[0].WillRetry || errs[0].Attempt != 1 {
		t.Fatalf("model errors %+v, want one overloaded attempt that is retried", errs)
	}
	if evs[len(evs)-2].Type() != trajectory.TypeModelResponse {
		t.Errorf("the reply after the retry is not recorded")
	}
}

func TestTheCostOfASessionIsRecordedAtTheConfiguredPrices(t *testing.T) {
	r := runScript(t, "clean", runOpts{cfg: func(c *Config) { c.Limits.Prices = Prices{Input: 3, Output: 15} }})
	end := sessionEnd(t, r.events)
	want := (float64(end.Usage.InputTokens)*3 + float64(end.Usage.OutputTokens)*15) / 1e6
	if end.CostUSD <= 0 || end.CostUSD != want {
		t.Fatalf("cost %v, want %v for usage %+v", end.CostUSD, want, end.Usage)
	}
}

func TestACostBudgetWithoutPricesIsAConfigError(t *testing.T) {
	var cfg Config
	cfg.Limits.CostBudget = 1
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), "needs prices") {
		t.Fatalf("err = %v, want one saying the cost budget needs prices", err)
	}
}
