package harness

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestNewProviderBuildsEachModelAndRefusesWhatCannotBeUsed(t *testing.T) {
	if _, err := NewProvider(Model{Script: []byte("turns:\n  - content:\n      - text: hi\n"), ScriptName: "s.yaml"}); err != nil {
		t.Fatalf("a script: %v", err)
	}
	if _, err := NewProvider(Model{Recording: []trajectory.Event{}}); err != nil {
		t.Fatalf("a recording: %v", err)
	}
	for name, m := range map[string]Model{
		"a script that does not parse":  {Script: []byte("turns: [[["), ScriptName: "bad.yaml"},
		"a missing script file":         {ScriptFile: filepath.Join(t.TempDir(), "none.yaml")},
		"a live provider without model": {Live: "anthropic"},
		"an unknown provider":           {Live: "acme", Name: "m"},
		"nothing":                       {},
	} {
		if _, err := NewProvider(m); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: %v, want ErrSpec", name, err)
		}
	}
}

func TestAPlantReadsBackAsItIsRecordedAndAppliesFromItsTurn(t *testing.T) {
	pl := Plant{CacheBreaker: PlantToolsReordered, FromTurn: 3}
	got, err := ParsePlant(pl.String())
	if err != nil || got != pl {
		t.Fatalf("ParsePlant(%q) = %+v, %v", pl.String(), got, err)
	}
	for _, bad := range []string{"", "tools_reordered", "tools_reordered@0", "melt@2"} {
		if _, err := ParsePlant(bad); err == nil {
			t.Errorf("ParsePlant(%q) accepted it", bad)
		}
	}
	req := &llm.Request{Tools: []llm.ToolDef{{Name: "a"}, {Name: "b"}}}
	pl.Apply(2, req)
	if req.Tools[0].Name != "a" {
		t.Fatal("planted before its turn")
	}
	pl.Apply(3, req)
	if req.Tools[0].Name != "b" {
		t.Fatal("not planted at its turn")
	}
}

func TestLoadContinuationRefusesWhatCannotBeCarriedOn(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadContinuation(filepath.Join(dir, "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	torn := filepath.Join(dir, "torn.jsonl")
	if err := os.WriteFile(torn, []byte(`{"v":2,"session":"s","seq":1`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadContinuation(torn); !errors.Is(err, ErrContinuation) {
		t.Fatalf("a torn file: %v", err)
	}
}

func TestRecordedAnswersApproveOnlyTheSameInput(t *testing.T) {
	in := json.RawMessage(`{"command":"touch x"}`)
	a := NewRecordedAnswers([]trajectory.Event{
		{Payload: &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "bash"}, Input: in}},
		{Payload: &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "bash"}, Source: trajectory.SourceUser}}},
	})
	ctx := context.Background()
	if ok, _ := a.Confirm(ctx, executor.Prompt{ToolUseID: "t1", Input: in}); !ok {
		t.Fatal("the approved call with the same input was refused")
	}
	if ok, _ := a.Confirm(ctx, executor.Prompt{ToolUseID: "t1", Input: json.RawMessage(`{"command":"rm -rf x"}`)}); ok {
		t.Fatal("a changed input borrowed the approval")
	}
	if ok, _ := a.Confirm(ctx, executor.Prompt{ToolUseID: "t2", Input: in}); ok {
		t.Fatal("a call never approved was approved")
	}
	if m := a.Mismatches(); len(m) != 1 || m[0] != "t1" {
		t.Fatalf("mismatches %v", m)
	}
}

// FuzzParsePlant: a recording's plant tag is outside input; it parses or
// is refused, never panics, and what parses reads back the same.
func FuzzParsePlant(f *testing.F) {
	for _, s := range []string{"tools_reordered@3", "system_timestamp@1", "", "@", "x@-1", "tools_reordered@99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pl, err := ParsePlant(s)
		if err != nil {
			return
		}
		again, err := ParsePlant(pl.String())
		if err != nil || again != pl {
			t.Fatalf("%q parsed as %+v, which reads back as %+v (%v)", s, pl, again, err)
		}
	})
}
