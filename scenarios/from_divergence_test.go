package scenarios_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/scenarios"
)

// recordArchive runs a scenario archive with its recording kept, as
// retrace eval --out does, and returns the recording's path.
func recordArchive(t *testing.T, archive string) string {
	t.Helper()
	s, err := scenarios.Parse([]byte(archive), "recorded.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(context.Background(), []*scenarios.Scenario{s}, scenarios.Options{Out: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Scenarios[0].Runs[0]
	if run.Error != "" || len(run.Failures) > 0 || run.Trajectory == "" {
		t.Fatalf("the scenario did not pass as recorded: %+v", run)
	}
	return run.Trajectory
}

// A session whose bash call prints random bytes diverges from its
// recording on every run: --keep divergence:tool_output_changed makes a
// scenario that passes while the output changes.
const randomOutput = `-- scenario.yaml --
name: random_output
prompt: Print some random bytes.
config:
  permissions:
    mode: bypass
model:
  turns:
    - content:
        - tool_use: {id: toolu_rand, name: bash, input: {command: "od -An -N8 -tx1 /dev/urandom"}}
    - content:
        - text: "Done."
expect:
  outcome: {reason: end_turn}
`

// A session that reads a file diverges from its recording once the file
// differs.
const readsData = `-- scenario.yaml --
name: reads_data
prompt: What does data.txt say?
model:
  turns:
    - content:
        - tool_use: {id: toolu_data, name: read, input: {file_path: data.txt}}
    - content:
        - text: "It says one."
expect:
  outcome: {reason: end_turn}
-- workspace/data.txt --
one
`

// Must fire: a run whose tool output differs from the recording shows
// tool_output_changed, and the kept scenario passes; the same scenario
// whose expectation is negated fails, naming the class it found.
func TestFromKeepDivergenceFires(t *testing.T) {
	rec := recordArchive(t, randomOutput)
	kept := from(t, rec, "divergence:tool_output_changed")
	a := string(kept.Archive)
	for _, want := range []string{"-- reference.jsonl --\n", "  divergences:\n    - {class: tool_output_changed}\n"} {
		if !strings.Contains(a, want) {
			t.Fatalf("the scenario lacks %q:\n%s", want, a)
		}
	}
	if r := evalArchive(t, kept.Archive); !passes(r) {
		t.Fatalf("the scenario kept to divergence:tool_output_changed fails: %+v\n%s", r, a)
	}
	no, err := scenarios.ParseProperty("no divergence:tool_output_changed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &no}); !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), "a run of the scenario shows tool_output_changed ×1") {
		t.Errorf("From --keep no divergence:tool_output_changed of a run that diverges = %v, want ErrFrom naming what a run shows", err)
	}
	negated := strings.Replace(a, "{class: tool_output_changed}", "{class: tool_output_changed, count: 0}", 1)
	r := evalArchive(t, []byte(negated))
	if passes(r) {
		t.Fatalf("a run that diverges passes an expectation of no divergence:\n%s", negated)
	}
	if got := r.Failures[0].Expect + " " + r.Failures[0].Got; !strings.Contains(got, "tool_output_changed ×1") {
		t.Errorf("the failure does not name the class found: %s", got)
	}
}

// Must not fire: the same file, the same output, no divergence. --keep
// divergence:tool_output_changed is refused with what a run shows, and
// the negation is kept; with the workspace file changed, it fails.
func TestFromKeepDivergenceQuiet(t *testing.T) {
	rec := recordArchive(t, readsData)
	p, err := scenarios.ParseProperty("divergence:tool_output_changed")
	if err != nil {
		t.Fatal(err)
	}
	_, err = scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p})
	if !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), "shows no divergence") {
		t.Fatalf("From --keep divergence:tool_output_changed of a run that does not diverge = %v, want ErrFrom naming what a run shows", err)
	}
	kept := from(t, rec, "no divergence:tool_output_changed")
	if r := evalArchive(t, kept.Archive); !passes(r) {
		t.Fatalf("the scenario kept to no divergence fails: %+v\n%s", r, kept.Archive)
	}
	changed := strings.Replace(string(kept.Archive), "-- workspace/data.txt --\none\n", "-- workspace/data.txt --\ntwo\n", 1)
	if changed == string(kept.Archive) {
		t.Fatalf("the test's edit did not apply to:\n%s", kept.Archive)
	}
	r := evalArchive(t, []byte(changed))
	if passes(r) {
		t.Fatalf("a run that reads another file content shows no tool_output_changed:\n%s", changed)
	}
	found := false
	for _, f := range r.Failures {
		found = found || strings.Contains(f.Got, "tool_output_changed")
	}
	if !found {
		t.Errorf("no failure names tool_output_changed: %+v", r.Failures)
	}
}

// --minimize works with a kept divergence as with any property: the
// turns, calls and files shrink, the reference stays the whole
// recording, and the result still shows the divergence.
func TestFromKeepDivergenceMinimize(t *testing.T) {
	archive := randomOutput + "-- workspace/notes.md --\nunused\n"
	archive = strings.Replace(archive, `        - text: "Done."`, `        - tool_use: {id: toolu_read, name: read, input: {file_path: notes.md}}
    - content:
        - text: "Done."`, 1)
	rec := recordArchive(t, archive)
	p, err := scenarios.ParseProperty("divergence:tool_output_changed")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p, Minimize: &scenarios.MinimizeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Minimized
	if m == nil || m.TurnsAfter >= m.TurnsBefore || m.FilesAfter != 0 {
		t.Fatalf("the minimization did not drop the turn and file the divergence does not need: %+v\n%s", m, res.Archive)
	}
	whole, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(res.Archive), "-- reference.jsonl --\n"+string(whole)) {
		t.Fatalf("the reference is not the whole recording:\n%s", res.Archive)
	}
	if r := evalArchive(t, res.Archive); !passes(r) {
		t.Fatalf("the minimized scenario fails: %+v\n%s", r, res.Archive)
	}
}

// Must not fire: paths of the run's own workspace and throwaway home
// stand for the recording's, as replay compares them.
func TestFromKeepDivergencePathsAreTheRuns(t *testing.T) {
	archive := strings.Replace(randomOutput, "od -An -N8 -tx1 /dev/urandom", `echo $HOME $PWD`, 1)
	rec := recordArchive(t, archive)
	kept := from(t, rec, "no divergence:tool_output_changed")
	if r := evalArchive(t, kept.Archive); !passes(r) {
		t.Fatalf("a run whose output names its own workspace and home diverges: %+v\n%s", r, kept.Archive)
	}
}
