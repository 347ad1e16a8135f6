package replay

import (
	"github.com/retrace-dev/retrace/compare"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// recordSuite records testdata/<name>.yaml of the agent suite in a fresh
// suite workspace, with the defenses given turned on or off.
func recordSuite(t *testing.T, name string, defenses config.Defenses) string {
	t.Helper()
	ws := t.TempDir()
	writeFiles(t, ws, suiteFiles)
	path := filepath.Join("..", "agent", "testdata", name+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recordSession(t, recordOpts{script: data, name: path, ws: ws, defenses: defenses})
}

// whatIf writes a what-if configuration file.
func whatIf(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "what-if.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func replayWith(t *testing.T, recording, cfg string) Result {
	t.Helper()
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), Config: cfg, TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func table(r Report) string {
	var sb strings.Builder
	r.Table(&sb)
	return sb.String()
}

// Every field of a what-if configuration takes effect in the replay: each
// case changes one of them from what the session was recorded with, and the
// replay must diverge with the class that field causes. The first case,
// which repeats the recorded policy, shows that the others diverge because
// of the field they change and nothing else.
func TestEveryWhatIfFieldChangesTheReplay(t *testing.T) {
	cases := []struct {
		name     string
		script   string
		recorded config.Defenses
		config   string
		want     Class // "" means identical
		end      trajectory.EndReason
	}{
		{"a what-if config that repeats the recorded policy replays identically",
			"clean", config.Defenses{}, "permissions:\n  mode: bypass\n", "", trajectory.EndTurn},
		{"a deny rule for the write tool refuses the recorded write",
			"clean", config.Defenses{}, "permissions:\n  mode: bypass\n  deny: [\"Write\"]\n", compare.ClassPermission, trajectory.EndTurn},
		{"plan mode refuses the recorded write",
			"clean", config.Defenses{}, "permissions:\n  mode: plan\n", compare.ClassPermission, trajectory.EndTurn},
		{"a hook that blocks writes blocks the recorded write",
			"clean", config.Defenses{}, "permissions:\n  mode: bypass\nhooks:\n  - name: no_writes\n    event: PreToolUse\n    matcher: write\n    command: \"echo 'no writes here' >&2; exit 2\"\n",
			compare.ClassHook, trajectory.EndTurn},
		{"a turn limit of one stops a three-turn session after its first turn",
			"clean", config.Defenses{}, "permissions:\n  mode: bypass\nlimits:\n  max_turns: 1\n", compare.ClassEnd, trajectory.EndMaxTurns},
		{"turning loop detection on makes it fire where the recorded session had it off",
			"loop_shape", config.Defenses{}, "permissions:\n  mode: bypass\ndefenses:\n  enable: [loop_detection]\n", compare.ClassDefenseFired, trajectory.EndTurn},
		{"turning the repeated-read-only guard off lets the session run past where it was stopped",
			"repeated_readonly", config.Defenses{}, "permissions:\n  mode: bypass\ndefenses:\n  disable: [repeated_readonly]\n", compare.ClassDefenseStopped, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := replayWith(t, recordSuite(t, c.script, c.recorded), whatIf(t, c.config))
			got := classes(res.Report)
			switch {
			case c.want == "" && !res.Report.Identical():
				t.Fatalf("the replay diverges:\n%s", table(res.Report))
			case c.want != "" && !slices.Contains(got, c.want):
				t.Fatalf("want a %s divergence, got %v:\n%s", c.want, got, table(res.Report))
			}
			if c.end != "" && res.End.Reason != c.end {
				t.Fatalf("the replay ended with %s, want %s", res.End.Reason, c.end)
			}
		})
	}
}

// Regression (issue 13): a what-if config's limits were ignored, so with
// max_turns: 1 the replay of a three-turn session still ran three turns and
// said "identical".
func TestAWhatIfTurnLimitStopsTheReplayAndTheReportSaysSo(t *testing.T) {
	recording := recordSuite(t, "clean", config.Defenses{})
	res := replayWith(t, recording, whatIf(t, "permissions:\n  mode: bypass\nlimits:\n  max_turns: 1\n"))
	if res.End.Turns != 1 || res.End.Reason != trajectory.EndMaxTurns {
		t.Fatalf("the replay ran %d turns and ended with %s; want 1 turn, max_turns", res.End.Turns, res.End.Reason)
	}
	if res.Report.Identical() || !slices.Contains(classes(res.Report), compare.ClassEnd) {
		t.Fatalf("the report does not say the session ended differently:\n%s", table(res.Report))
	}
	if !strings.Contains(table(res.Report), string(trajectory.EndMaxTurns)) {
		t.Fatalf("the report does not name the new end reason:\n%s", table(res.Report))
	}
}

// Regression (issue 13): the defenses recorded in session_start were not
// given to the replayed agent, so a session recorded with loop detection
// on replayed with the default set and a false divergence.
func TestASessionRecordedWithLoopDetectionReplaysIdentically(t *testing.T) {
	recording := recordSuite(t, "loop_shape", config.Defenses{Enable: []trajectory.DefenseName{trajectory.DefenseLoopDetection}})
	events, err := trajectory.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	fired := slices.ContainsFunc(events, func(ev trajectory.Event) bool {
		d, ok := ev.Payload.(*trajectory.DefenseTrigger)
		return ok && d.Defense == trajectory.DefenseLoopDetection
	})
	if !fired {
		t.Fatal("the recording has no loop_detection trigger, so it proves nothing")
	}
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		t.Fatalf("the replay diverges:\n%s", table(res.Report))
	}
}

// A session that asked for streamed replies is replayed streaming, as
// session_start's config_hash and every model_request say it ran.
func TestAStreamedSessionReplaysStreamed(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, suiteFiles)
	data, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "clean.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	recording := recordSession(t, recordOpts{script: data, name: "clean.yaml", ws: ws, stream: true})
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		t.Fatalf("the replay diverges:\n%s", table(res.Report))
	}
	recorded, replayed := startOf(t, recording), startOf(t, res.Path)
	if recorded.ConfigHash != replayed.ConfigHash {
		t.Fatalf("config_hash %s recorded, %s replayed: the replay did not rebuild the session's configuration", recorded.ConfigHash, replayed.ConfigHash)
	}
}

func startOf(t *testing.T, path string) *trajectory.SessionStart {
	t.Helper()
	events, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return events[0].Payload.(*trajectory.SessionStart)
}

// The replay gives its session the base system prompt session_start
// recorded; a recording from before system_prompt was recorded gets it
// from its first request instead. Both replay identically.
func TestTheRecordedSystemPromptIsTheReplaysWithOrWithoutSessionStartsCopy(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, suiteFiles)
	data, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "clean.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const system = "You are a careful coding agent. Say what you did."
	recording := recordSession(t, recordOpts{script: data, name: "clean.yaml", ws: ws, system: system})
	if got := startOf(t, recording).SystemPrompt; got != system {
		t.Fatalf("session_start records system_prompt %q, want %q", got, system)
	}
	raw, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.jsonl")
	field := `"system_prompt":"` + system + `",`
	if !strings.Contains(string(raw), field) {
		t.Fatalf("the recording does not hold %s", field)
	}
	if err := os.WriteFile(old, []byte(strings.Replace(string(raw), field, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(recorder.BlobsDir(old), os.DirFS(recorder.BlobsDir(recording))); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{recording, old} {
		res, err := Run(t.Context(), RunOptions{Recording: path, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Report.Identical() {
			t.Fatalf("the replay of %s diverges:\n%s", path, table(res.Report))
		}
		if got := startOf(t, res.Path).SystemPrompt; got != system {
			t.Fatalf("the replay of %s ran with system prompt %q", path, got)
		}
	}
}

// classes lists the report's divergence classes in report order.
func classes(r Report) []compare.Class {
	var out []compare.Class
	for _, d := range r.Divergences {
		out = append(out, d.Class)
	}
	return out
}
