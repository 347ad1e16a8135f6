package agent

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestDeferredToolsAreListedAsNotLoadedUntilToolSearchLoadsThem runs the
// production path — Run builds the system prompt from the registry it is
// given — rather than setting any flag by hand.
func TestDeferredToolsAreListedAsNotLoadedUntilToolSearchLoadsThem(t *testing.T) {
	r := runScript(t, "deferred", runOpts{extra: []tools.Tool{cronTool{}}, verify: true})
	reqs := payloads[*trajectory.ModelRequest](r.events)
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if !strings.Contains(reqs[0].System, "cron_create ("+notLoadedLabel+")") {
		t.Errorf("the first system prompt does not label cron_create as not loaded:\n%s", reqs[0].System)
	}
	for i, req := range reqs {
		has := false
		for _, n := range req.ToolNames {
			has = has || n == "cron_create"
		}
		if want := i > 0; has != want {
			t.Errorf("request %d offers cron_create: %v, want %v", i+1, has, want)
		}
		// The static prefix never changes when a tool is loaded.
		if req.SystemHash != reqs[0].SystemHash {
			t.Errorf("request %d changed the system prompt", i+1)
		}
		// Loading a tool appends it: the earlier definitions keep their order.
		if i > 0 && strings.Join(req.ToolNames[:len(reqs[0].ToolNames)], ",") != strings.Join(reqs[0].ToolNames, ",") {
			t.Errorf("request %d reordered the tools: %v", i+1, req.ToolNames)
		}
	}
	start := payloads[*trajectory.SessionStart](r.events)[0]
	last := start.Tools[len(start.Tools)-1]
	if last.Name != "cron_create" || !last.Deferred {
		t.Errorf("catalog ends with %+v, want the deferred cron_create", last)
	}
}

func TestTheSystemPromptPartitionDependsOnlyOnStaticDeclarations(t *testing.T) {
	reg := newRegistry(t, cronTool{})
	before := SystemPrompt("base", reg)
	reg.Activate("cron_create")
	if after := SystemPrompt("base", reg); after != before {
		t.Errorf("activating a tool changed the system prompt:\n%s\n---\n%s", before, after)
	}
	if plain := SystemPrompt("base", newRegistry(t)); plain != "base" {
		t.Errorf("a registry without deferred tools changed the prompt: %q", plain)
	}
}

// TestResidentAndDeferredNamesShareNoLongPrefix guards against prefix
// collapse: a model that knows a deferred name but not its schema slides
// into the resident tool with the same prefix.
func TestResidentAndDeferredNamesShareNoLongPrefix(t *testing.T) {
	reg := newRegistry(t, cronTool{})
	var resident, deferred []string
	for _, tl := range reg.All() {
		if s := tl.Spec(); s.Deferred {
			deferred = append(deferred, s.Name)
		} else {
			resident = append(resident, s.Name)
		}
	}
	if len(deferred) == 0 {
		t.Fatal("no deferred tool: the test would check nothing")
	}
	for _, r := range resident {
		for _, d := range deferred {
			if n := commonPrefix(r, d); n >= 4 {
				t.Errorf("resident %s and deferred %s share the prefix %q", r, d, r[:n])
			}
		}
	}
	if commonPrefix("enter_plan_mode", "enter_worktree") < 4 {
		t.Error("commonPrefix misses the example of two plan and worktree tools")
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestCompactionDropsTheOldestResultsAndAnnouncesDeferredToolsAgain(t *testing.T) {
	big := strings.Repeat("a line of a large file that fills the context\n", 200)
	r := runScript(t, "compaction", runOpts{
		extra: []tools.Tool{cronTool{}}, files: map[string]string{"big.txt": big}, verify: true,
		cfg: func(c *Config) { c.Limits.ContextTokens = 3000 },
	})
	comps := payloads[*trajectory.Compaction](r.events)
	if len(comps) == 0 {
		t.Fatal("no compaction")
	}
	if c := comps[0]; c.Strategy != trajectory.CompactDrop || c.TokensAfter >= c.TokensBefore {
		t.Errorf("compaction %+v", c)
	}
	reminded := false
	for _, rm := range payloads[*trajectory.Reminder](r.events) {
		reminded = reminded || (rm.Kind == kindDeferredTools && strings.Contains(rm.Text, "cron_create"))
	}
	if !reminded {
		t.Error("the deferred tools were not announced again after compaction")
	}
	dropped := false
	for _, req := range payloads[*trajectory.ModelRequest](r.events) {
		for _, m := range req.NewMessages {
			for _, b := range m.Content {
				dropped = dropped || (b.Type == trajectory.BlockToolResult && b.Content == droppedOutput)
			}
		}
	}
	if !dropped {
		for _, req := range payloads[*trajectory.ModelRequest](r.events) {
			t.Logf("req %d msgs, %d new", len(req.MessageHashes), len(req.NewMessages))
			for _, m := range req.NewMessages {
				for _, b := range m.Content {
					t.Logf("  %s %s %.60q", m.Role, b.Type, b.Content+b.Text)
				}
			}
		}
		t.Error("no request carried a dropped tool result")
	}
}

func TestASessionUnderTheContextBudgetIsNeverCompacted(t *testing.T) {
	r := runScript(t, "clean", runOpts{verify: true})
	if n := len(payloads[*trajectory.Compaction](r.events)); n != 0 {
		t.Errorf("%d compactions", n)
	}
}

// BaseSystemPrompt undoes SystemPrompt, so that a replay of a recording
// without session_start's system_prompt still gives its session the base
// prompt, never the deferred-tools section twice.
func TestBaseSystemPromptRemovesExactlyTheDeferredToolsSection(t *testing.T) {
	reg := newRegistry(t, cronTool{})
	for _, base := range []string{"", "You are a careful coding agent.", "Two paragraphs.\n\nThe second mentions # Deferred tools inline."} {
		full := SystemPrompt(base, reg)
		if !strings.Contains(full, DeferredToolsHeading) {
			t.Fatalf("SystemPrompt(%q) has no deferred-tools section", base)
		}
		if got := BaseSystemPrompt(full); got != base {
			t.Fatalf("BaseSystemPrompt(SystemPrompt(%q)) = %q", base, got)
		}
	}
	if got := BaseSystemPrompt("no deferred tools here"); got != "no deferred tools here" {
		t.Fatalf("a prompt without the section changed: %q", got)
	}
}
