package scenarios_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/scenarios"
)

// recordRun runs the built-in scenario name with its recording kept, as
// retrace eval --out does, and returns the recording's path.
func recordRun(t *testing.T, name string) string {
	t.Helper()
	s, err := scenarios.BuiltinScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Out: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Scenarios[0].Runs[0]
	if run.Error != "" || len(run.Failures) > 0 || run.Trajectory == "" {
		t.Fatalf("%s did not pass as recorded: %+v", name, run)
	}
	return run.Trajectory
}

// evalArchive parses and runs a generated scenario and returns its one run.
func evalArchive(t *testing.T, archive []byte) results.RunResult {
	t.Helper()
	s, err := scenarios.Parse(archive, "generated.txtar")
	if err != nil {
		t.Fatalf("the generated scenario does not parse: %v\n%s", err, archive)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Scenarios[0].Runs[0]
}

func passes(r results.RunResult) bool { return r.Error == "" && len(r.Failures) == 0 }

func from(t *testing.T, rec, keep string) scenarios.FromResult {
	t.Helper()
	opts := scenarios.FromOptions{Recording: rec}
	if keep != "" {
		p, err := scenarios.ParseProperty(keep)
		if err != nil {
			t.Fatal(err)
		}
		opts.Keep = &p
	}
	res, err := scenarios.From(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A recorded run of a clean, a detector and a defense scenario becomes a
// scenario that passes with every derived expectation, and with only a
// kept property; the kept scenario fails once the property is gone.
func TestFromRoundTrip(t *testing.T) {
	cases := []struct {
		name, keep string
		// remove takes the kept property out of the generated scenario.
		remove func(string) string
	}{
		{name: "clean", keep: "failure:tool_error,tool=read", remove: func(s string) string {
			// The file the read missed is there: the read succeeds.
			return s + "-- workspace/MISSING.md --\nnow here\n"
		}},
		{name: "detector_denial_loop_fires", keep: "detector:denial_loop", remove: func(s string) string {
			// With the denial fuse on again, the fuse stops the loop.
			return strings.Replace(s, "  defenses:\n    disable:\n      - denial_fuse\n", "", 1)
		}},
		{name: "defense_denial_fuse_fires", keep: "defense:denial_fuse", remove: func(s string) string {
			return strings.Replace(s, "config:\n", "config:\n  defenses:\n    disable:\n      - denial_fuse\n", 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordRun(t, tc.name)
			all := from(t, rec, "")
			if r := evalArchive(t, all.Archive); !passes(r) {
				t.Fatalf("the scenario of every derived expectation fails: %+v\n%s", r, all.Archive)
			}
			kept := from(t, rec, tc.keep)
			if r := evalArchive(t, kept.Archive); !passes(r) {
				t.Fatalf("the scenario kept to %s fails: %+v\n%s", tc.keep, r, kept.Archive)
			}
			removed := tc.remove(string(kept.Archive))
			if removed == string(kept.Archive) {
				t.Fatalf("the test's edit did not apply to:\n%s", kept.Archive)
			}
			if r := evalArchive(t, []byte(removed)); passes(r) {
				t.Fatalf("the scenario kept to %s passes with the property removed:\n%s", tc.keep, removed)
			}
		})
	}
}

// The derived expectations say what happened: a changed tool result
// stops the script at the turn that expected it.
func TestFromScriptReportsAChangedRequest(t *testing.T) {
	rec := recordRun(t, "clean")
	all := from(t, rec, "")
	// The missing file now exists, so the read succeeds where it failed.
	changed := string(all.Archive) + "-- workspace/MISSING.md --\nnow here\n"
	r := evalArchive(t, []byte(changed))
	if passes(r) {
		t.Fatalf("a run whose read succeeds where the recording's failed passes:\n%s", changed)
	}
	if !strings.Contains(r.EndError+r.Error, "toolu_missing") {
		t.Errorf("the failure does not name the call whose result changed: %+v", r)
	}
}

// Bad input is refused with what is missing, wrapping ErrFrom.
func TestFromRefusesWhatCannotBeAScenario(t *testing.T) {
	rec := recordRun(t, "clean")
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(rec)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := strings.SplitAfter(string(data), "\n")
	var nosnap strings.Builder
	for _, l := range lines {
		if !strings.Contains(l, `"type":"workspace_snapshot"`) {
			nosnap.WriteString(l)
		}
	}
	cases := []struct{ name, path, want string }{
		{"torn", write("torn.jsonl", strings.Join(lines[:4], "")), "no session_end"},
		{"torn line", write("tornline.jsonl", strings.Join(lines[:4], "")+lines[4][:20]), "is torn"},
		{"not a trajectory", write("other.jsonl", "{\"hello\": 1}\n"), "not a retrace trajectory"},
		{"no snapshot", write("nosnap.jsonl", nosnap.String()), "no workspace snapshot"},
		{"imported", write("imported.jsonl", strings.Replace(string(data), `"tags":{`, `"tags":{"source":"import","client":"aider",`, 1)), "a client retrace has no agent profile for"},
		{"mock serve", write("mock.jsonl", strings.Replace(string(data), `"tags":{`, `"tags":{"source":"mock_serve",`, 1)), "from an unknown client"},
		{"missing", filepath.Join(dir, "none.jsonl"), "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: tc.path})
			if !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrFrom saying %q", err, tc.want)
			}
		})
	}
	p, _ := scenarios.ParseProperty("detector:phantom_user_message")
	_, err = scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p})
	if !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), "does not show it") {
		t.Fatalf("a property the recording does not show: got %v", err)
	}
}

func TestParseProperty(t *testing.T) {
	for in, want := range map[string]string{
		"detector:denial_loop":                "detector:denial_loop",
		"failure:permission_denied,tool=bash": "failure:permission_denied,tool=bash",
		"failure:timeout":                     "failure:timeout",
		"defense:denial_fuse":                 "defense:denial_fuse",
		"outcome":                             "outcome",
		"no defense:denial_fuse":              "no defense:denial_fuse",
		"no detector:denial_loop":             "no detector:denial_loop",
		"permission:deny,step=sandbox,source=sandbox,tool=bash": "permission:deny,tool=bash,step=sandbox,source=sandbox",
		"event:compaction":                        "event:compaction",
		"event:tool_call,streamed=true,tool=read": "event:tool_call,tool=read,streamed=true",
		"detector:dead_defense":                   "detector:dead_defense",
		"divergence:tool_output_changed":          "divergence:tool_output_changed",
		"no divergence:call_extra":                "no divergence:call_extra",
	} {
		p, err := scenarios.ParseProperty(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseProperty(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "detector", "detector:nope", "failure:nope", "failure:timeout,tool", "defense:nope", "divergence:x", "divergence:tool_output_changed,tool=bash", "divergence:", "no outcome", "permission:maybe", "permission:deny,step=nope", "event:nope", "failure:timeout,step=fuse", "failure:timeout,tool=bash,tool=read", "event:compaction,streamed=true", "event:tool_call,streamed=yes", "failure:timeout,streamed=true"} {
		if _, err := scenarios.ParseProperty(bad); !errors.Is(err, scenarios.ErrProperty) {
			t.Errorf("ParseProperty(%q) = %v, want ErrProperty", bad, err)
		}
	}
}

// fiftyTurns is a 50-turn session with one planted fault: among 45
// harmless reads, four turns in a row try a refused command with the
// denial fuse off, which the denial_loop detector finds.
func fiftyTurns() string {
	var b strings.Builder
	b.WriteString("-- scenario.yaml --\nname: fifty\nprompt: Look through the notes.\nconfig:\n  defenses: {disable: [denial_fuse, repeated_readonly, low_yield_spin]}\nmodel:\n  turns:\n")
	for i := 1; i <= 49; i++ {
		if i >= 30 && i < 34 {
			// Each also greps, a call the fault does not need.
			fmt.Fprintf(&b, "    - content: [{tool_use: {name: bash, input: {command: \"touch done.txt\"}}}, {tool_use: {name: grep, input: {pattern: \"n%d\"}}}]\n", i)
			continue
		}
		fmt.Fprintf(&b, "    - content: [{tool_use: {name: grep, input: {pattern: \"note %d\"}}}]\n", i)
	}
	b.WriteString("    - content: [{text: \"Done.\"}]\n-- workspace/notes.txt --\nnote 1\n-- workspace/other.txt --\nunrelated\n")
	return b.String()
}

// A 50-turn session with one planted fault minimises to at most 5 turns
// in at most 200 runs, keeping the fault and dropping a call of a
// faulty turn that the fault does not need, and two minimisations give the
// same bytes, whatever -j.
func TestFromMinimizeFiftyTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scenario a few hundred times")
	}
	s, err := scenarios.Parse([]byte(fiftyTurns()), "fifty.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Out: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Scenarios[0].Runs[0].Trajectory
	p, _ := scenarios.ParseProperty("detector:denial_loop")
	var archives [][]byte
	for _, jobs := range []int{1, 2} {
		out, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p, Minimize: &scenarios.MinimizeOptions{Jobs: jobs}})
		if err != nil {
			t.Fatal(err)
		}
		m := out.Minimized
		t.Logf("-j %d: %s", jobs, m)
		if m.TurnsBefore != 50 || m.TurnsAfter > 5 || m.Runs > 200 || m.Exhausted || m.CallsAfter != m.TurnsAfter {
			t.Fatalf("-j %d: %s; want 50 turns down to at most 5, one call each, in at most 200 runs", jobs, m)
		}
		if r := evalArchive(t, out.Archive); !passes(r) {
			t.Fatalf("the minimized scenario does not keep the fault: %+v\n%s", r, out.Archive)
		}
		archives = append(archives, out.Archive)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Fatalf("two minimizations differ:\n%s\n----\n%s", archives[0], archives[1])
	}
	if strings.Contains(string(archives[0]), "workspace/other.txt") {
		t.Errorf("a workspace file the fault does not need is kept:\n%s", archives[0])
	}
}

// FuzzParseProperty: --keep is outside input; it never panics, and a
// property it accepts reads back the same from its String.
func FuzzParseProperty(f *testing.F) {
	for _, s := range []string{"detector:denial_loop", "failure:permission_denied,tool=bash", "defense:denial_fuse", "outcome", "failure:x,tool=", ":", "divergence:end_changed", "no divergence:hook_changed"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := scenarios.ParseProperty(s)
		if err != nil {
			if !errors.Is(err, scenarios.ErrProperty) {
				t.Fatalf("ParseProperty(%q): %v does not wrap ErrProperty", s, err)
			}
			return
		}
		q, err := scenarios.ParseProperty(p.String())
		if err != nil || q != p {
			t.Fatalf("ParseProperty(%q) = %+v, and its String %q reads back as %+v, %v", s, p, p.String(), q, err)
		}
	})
}

// Kept to the outcome, the scenario checks the end reason and exit code
// alone, and fails once the session ends otherwise.
func TestFromKeepOutcome(t *testing.T) {
	rec := recordRun(t, "clean")
	kept := from(t, rec, "outcome")
	if !strings.Contains(string(kept.Archive), "  outcome: {reason: end_turn, exit_code: 0}\n") || strings.Contains(string(kept.Archive), "events:") {
		t.Fatalf("the scenario kept to its outcome expects more or less:\n%s", kept.Archive)
	}
	if r := evalArchive(t, kept.Archive); !passes(r) {
		t.Fatalf("the scenario kept to its outcome fails: %+v\n%s", r, kept.Archive)
	}
	// With a turn limit of 1 the session stops at max_turns.
	limited := strings.Replace(string(kept.Archive), "    max_turns: 50\n", "    max_turns: 1\n", 1)
	if r := evalArchive(t, []byte(limited)); passes(r) {
		t.Fatalf("the scenario kept to its outcome passes when the session ends otherwise:\n%s", limited)
	}
}

// Minimization drops the config keys the kept property does not need
// and the lines of a large workspace file it does not need: of a 60-line
// script whose one exit 3 fails the call (the command runs it when it is
// there), that line is left, and of the config the permission mode that
// lets bash run.
func TestFromMinimizeConfigAndLines(t *testing.T) {
	var script strings.Builder
	for i := 1; i <= 60; i++ {
		if i == 37 {
			script.WriteString("exit 3\n")
			continue
		}
		fmt.Fprintf(&script, "echo line %d\n", i)
	}
	src := "-- scenario.yaml --\nname: lines\nprompt: Run the check.\nconfig:\n  permissions: {mode: bypass}\n  defenses: {disable: [low_yield_spin]}\nmodel:\n  turns:\n" +
		"    - content: [{tool_use: {name: bash, input: {command: \"[ ! -f check.sh ] || sh check.sh\"}}}]\n    - content: [{text: Done.}]\n" +
		"-- workspace/check.sh --\n" + script.String() + "-- workspace/other.txt --\nunrelated\n"
	s, err := scenarios.Parse([]byte(src), "lines.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Out: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Scenarios[0].Runs[0].Trajectory
	p, _ := scenarios.ParseProperty("failure:tool_error,tool=bash")
	out, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p, Minimize: &scenarios.MinimizeOptions{Jobs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	m := out.Minimized
	t.Logf("%s", m)
	archive := string(out.Archive)
	if m.ConfigAfter != 1 || m.ConfigAfter >= m.ConfigBefore || m.FilesAfter != 1 {
		t.Errorf("%s: want one config key and one file left", m)
	}
	if !strings.Contains(archive, "workspace/check.sh holds lines 37 of its 60") || !strings.Contains(archive, "-- workspace/check.sh --\nexit 3\n") {
		t.Errorf("the script is not cut to its exit 3:\n%s", archive)
	}
	if !strings.Contains(archive, "config:\n  permissions:\n    mode: bypass\n") || strings.Contains(archive, "low_yield_spin") {
		t.Errorf("the config is not cut to the permission mode:\n%s", archive)
	}
	if r := evalArchive(t, out.Archive); !passes(r) {
		t.Fatalf("the minimized scenario fails: %+v\n%s", r, archive)
	}
	// Without the line that fails, the call succeeds: the scenario fails.
	fixed := strings.Replace(archive, "-- workspace/check.sh --\nexit 3\n", "-- workspace/check.sh --\nexit 0\n", 1)
	if r := evalArchive(t, []byte(fixed)); passes(r) {
		t.Fatalf("the scenario passes without the failing line:\n%s", fixed)
	}
}

// Kept to a defense that did not act (no defense:NAME), the scenario
// expects defense_not_triggered, and fails once the defense acts.
func TestFromKeepDefenseNotTriggered(t *testing.T) {
	rec := recordRun(t, "detector_denial_loop_fires")
	kept := from(t, rec, "no defense:denial_fuse")
	if !strings.Contains(string(kept.Archive), "    - {defense_not_triggered: denial_fuse}\n") {
		t.Fatalf("the scenario does not expect the fuse not to act:\n%s", kept.Archive)
	}
	if r := evalArchive(t, kept.Archive); !passes(r) {
		t.Fatalf("the scenario fails: %+v\n%s", r, kept.Archive)
	}
	on := strings.Replace(string(kept.Archive), "  defenses:\n    disable:\n      - denial_fuse\n", "", 1)
	if on == string(kept.Archive) {
		t.Fatalf("the test's edit did not apply to:\n%s", kept.Archive)
	}
	if r := evalArchive(t, []byte(on)); passes(r) {
		t.Fatalf("the scenario passes with the fuse acting:\n%s", on)
	}
	// A recording that shows the defense acting cannot keep its absence.
	p, _ := scenarios.ParseProperty("no defense:denial_fuse")
	_, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: recordRun(t, "defense_denial_fuse_fires"), Keep: &p})
	if !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), "the recording shows defense:denial_fuse") {
		t.Fatalf("got %v, want ErrFrom saying the recording shows the defense", err)
	}
}

// A secret in the task or a workspace file stays out of the scenario:
// the recording's text is redacted, the snapshot does not capture a file
// that holds a secret (and the archive says so), and From redacts what it
// writes once more.
func TestFromRedactsSecrets(t *testing.T) {
	key := "sk-ant-" + strings.Repeat("a1B2", 8)
	src := "-- scenario.yaml --\nname: secret\nprompt: Read notes.txt with key " + key + ".\nmodel:\n  turns:\n" +
		"    - content: [{tool_use: {name: read, input: {file_path: notes.txt}}}]\n    - content: [{text: Done.}]\n" +
		"-- workspace/notes.txt --\nANTHROPIC_API_KEY=" + key + "\n"
	s, err := scenarios.Parse([]byte(src), "secret.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Out: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := from(t, res.Scenarios[0].Runs[0].Trajectory, "")
	if strings.Contains(string(out.Archive), key) || !strings.Contains(string(out.Archive), "[REDACTED:anthropic]") {
		t.Fatalf("the secret is not redacted:\n%s", out.Archive)
	}
	if !strings.Contains(string(out.Archive), "workspace/notes.txt: not captured by the snapshot (it holds a secret") {
		t.Errorf("the archive does not say what it redacted:\n%s", out.Archive)
	}
}
