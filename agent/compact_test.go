package agent

import (
	"github.com/retrace-dev/retrace/agent/tools"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// smallWindow is a session whose model has a 10000-token window (given by
// the configuration), so that scripted usage can cross the threshold.
func smallWindow(strategy trajectory.CompactionStrategy) func(*Config) {
	return func(c *Config) {
		c.Limits.ContextWindow = 10_000
		c.Limits.Compaction = strategy
	}
}

// notes is a tool output big enough to be worth dropping.
var notes = map[string]string{"notes.txt": strings.Repeat("a note that takes room in the context\n", 40)}

func TestReportedUsageOverTheThresholdCompactsAndIsRecordedAsMeasured(t *testing.T) {
	r := runScript(t, "compaction_usage_drop", runOpts{verify: true, files: notes, cfg: smallWindow(trajectory.CompactDrop)})
	comps := payloads[*trajectory.Compaction](r.events)
	if len(comps) != 1 {
		t.Fatalf("%d compactions, want 1: %+v", len(comps), comps)
	}
	c := comps[0]
	// 9000 input + 20 output reported, plus the estimate of build.log's result.
	if c.Strategy != trajectory.CompactDrop || c.MeasuredBy != trajectory.MeasuredUsage || c.TokensBefore < 9020 ||
		c.ThresholdTokens != 8000 || c.ContextWindow != 10_000 || c.WindowSource != trajectory.WindowConfig || c.ResultsDropped != 1 {
		t.Errorf("compaction %+v", c)
	}
	if c.TokensAfter >= c.TokensBefore {
		t.Errorf("tokens after %d, before %d", c.TokensAfter, c.TokensBefore)
	}
	// The history's own estimate is far under the threshold: only the
	// reported usage can have triggered this.
	for _, req := range payloads[*trajectory.ModelRequest](r.events) {
		if req.RequestBytes/4 > 8000 {
			t.Fatalf("a request of %d bytes: the estimate alone would compact", req.RequestBytes)
		}
	}
	if n := len(payloads[*trajectory.ModelRequest](r.events)); n != 3 {
		t.Errorf("%d model requests, want 3 (no summary request under drop)", n)
	}
}

func TestASummarisingCompactionAsksTheModelInARequestOfItsOwnAndReplacesTheOlderTurns(t *testing.T) {
	r := runScript(t, "compaction_usage", runOpts{verify: true, files: notes, cfg: smallWindow(trajectory.CompactSummarize)})
	comps := payloads[*trajectory.Compaction](r.events)
	if len(comps) != 2 || comps[0].Strategy != trajectory.CompactDrop || comps[1].Strategy != trajectory.CompactSummarize {
		t.Fatalf("compactions %+v, want drop then summarize", comps)
	}
	s := comps[1]
	if s.SummaryTurn != 3 || s.MessagesAfter >= s.MessagesBefore || s.MeasuredBy != trajectory.MeasuredUsage || s.TokensAfter > s.TokensBefore {
		t.Errorf("summary compaction %+v", s)
	}
	reqs := payloads[*trajectory.ModelRequest](r.events)
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (the summary request is one)", len(reqs))
	}
	// The request after the summary starts with it, labelled as the
	// harness's, and no longer carries the first prompt.
	first := reqs[3].NewMessages[0]
	if first.Role != trajectory.RoleUser || !strings.Contains(first.Content[0].Text, "<harness-summary>") ||
		!strings.Contains(first.Content[0].Text, "both were read") {
		t.Errorf("first message after the summary: %+v", first)
	}
	if len(reqs[3].MessageHashes) != 3 {
		t.Errorf("the request after the summary holds %d messages, want the summary, the last call and its result", len(reqs[3].MessageHashes))
	}
	end := payloads[*trajectory.SessionEnd](r.events)[0]
	if end.Turns != 4 || end.Usage.InputTokens != 1000+9000+9100+900 {
		t.Errorf("session_end %+v: the summary request's turn and usage count", end)
	}
}

func TestAShortSessionUnderTheThresholdIsNotCompacted(t *testing.T) {
	r := runScript(t, "compaction_usage_quiet", runOpts{verify: true, cfg: smallWindow(trajectory.CompactSummarize)})
	if comps := payloads[*trajectory.Compaction](r.events); len(comps) != 0 {
		t.Errorf("compactions %+v", comps)
	}
}

func TestWithoutReportedUsageTheEstimateDecidesAndIsRecordedAsSuch(t *testing.T) {
	big := strings.Repeat("a line of a large file that fills the context\n", 200)
	r := runScript(t, "compaction", runOpts{
		extra: []tools.Tool{cronTool{}}, files: map[string]string{"big.txt": big}, verify: true,
		cfg: func(c *Config) { c.Limits.ContextTokens = 3000 },
	})
	comps := payloads[*trajectory.Compaction](r.events)
	if len(comps) == 0 {
		t.Fatal("no compaction")
	}
	// The mock reports its own estimate as usage when the script gives
	// none, so the measure is usage; what matters is that it is named.
	if m := comps[0].MeasuredBy; !m.Valid() {
		t.Errorf("measured_by %q", m)
	}
	if comps[0].ThresholdTokens != 3000 {
		t.Errorf("threshold %d, want the explicit context_tokens", comps[0].ThresholdTokens)
	}
}

func TestContextSizeFallsBackToTheEstimateWhenNoUsageWasReported(t *testing.T) {
	s := &session{history: []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: strings.Repeat("x", 400)}}}}}
	if n, m := s.contextSize(); m != trajectory.MeasuredEstimate || n != estimateTokens(s.history) {
		t.Errorf("no usage: %d %s", n, m)
	}
	s.lastUsage, s.usageMark = &trajectory.Usage{}, 0
	if _, m := s.contextSize(); m != trajectory.MeasuredEstimate {
		t.Errorf("all-zero usage is no measurement, got %s", m)
	}
	s.lastUsage = &trajectory.Usage{InputTokens: 500, CacheReadTokens: 4000, OutputTokens: 10}
	if n, m := s.contextSize(); m != trajectory.MeasuredUsage || n != 4510 {
		t.Errorf("usage: %d %s, want 4510 usage", n, m)
	}
}

func TestTheModelTableKnowsCommonModelsAndSaysWhenItAssumes(t *testing.T) {
	cases := []struct {
		model  string
		window int64
		source trajectory.WindowSource
	}{
		{"claude-sonnet-4-5-20250929", 200_000, trajectory.WindowModelTable},
		{"claude-3-5-haiku-latest", 200_000, trajectory.WindowModelTable},
		{"gpt-4.1-mini", 1_047_576, trajectory.WindowModelTable},
		{"gpt-4o", 128_000, trajectory.WindowModelTable},
		{"gpt-5-mini", 400_000, trajectory.WindowModelTable},
		{"claude-opus-45", DefaultContextWindow, trajectory.WindowDefault},
		{"mock-1", DefaultContextWindow, trajectory.WindowDefault},
		{"my-proxy-model", 32_000, trajectory.WindowConfig},
		{"gpt-4o-2024-08-06", 64_000, trajectory.WindowConfig},
	}
	configured := map[string]ModelInfo{"my-proxy-model": {ContextWindow: 32_000}, "gpt-4o-2024": {ContextWindow: 64_000}}
	for _, c := range cases {
		info, source, known := LookupModel(c.model, configured)
		if info.ContextWindow != c.window || source != c.source || known != (c.source != trajectory.WindowDefault) {
			t.Errorf("%s: %d %s %v, want %d %s", c.model, info.ContextWindow, source, known, c.window, c.source)
		}
	}
}
