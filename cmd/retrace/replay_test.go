package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/trajectory"
)

// recordDemo runs the demo and returns its trajectory.
func recordDemo(t *testing.T) string {
	t.Helper()
	runs := t.TempDir()
	if code, _, stderr := runCLI(t, map[string]string{"RETRACE_DIR": runs}, "run"); code != ExitOK {
		t.Fatalf("demo: exit %d\n%s", code, stderr)
	}
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("demo runs %v (%v)", files, err)
	}
	return files[0]
}

func readEvents(t *testing.T, path string) []trajectory.Event {
	t.Helper()
	evs, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestReplayingARecordingIsIdenticalAndDeterministic(t *testing.T) {
	rec := recordDemo(t)
	out := t.TempDir()
	var replays []string
	for i := 0; i < 2; i++ {
		// The demo is our own recording, so it is trusted: its accept_edits
		// policy applies as when it was recorded.
		code, stdout, stderr := runCLI(t, nil, "replay", rec, "--out", out, "--format", "json", "--strict", "--trust-recording")
		if code != ExitOK {
			t.Fatalf("replay %d: exit %d\n%s\n%s", i, code, stdout, stderr)
		}
		var doc struct {
			Identical bool   `json:"identical"`
			Replay    string `json:"replay"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || !doc.Identical {
			t.Fatalf("replay %d: %v %s", i, err, stdout)
		}
		if rep, err := trajectory.ValidateFile(doc.Replay); err != nil || len(rep.Problems) != 0 {
			t.Fatalf("the replay's trajectory: %v %v", rep.Problems, err)
		}
		replays = append(replays, doc.Replay)
	}
	// Two replays of one recording are the same once times and paths are normalised.
	a, b := readEvents(t, replays[0]), readEvents(t, replays[1])
	ws := func(evs []trajectory.Event) string { return evs[0].Payload.(*trajectory.SessionStart).Workspace }
	if rep := compare.Sessions(a, b, compare.Options{PathRewrites: []compare.PathRewrite{{Old: ws(a), New: ws(b)}}}); !rep.Identical() {
		var sb strings.Builder
		rep.Table(&sb)
		t.Fatalf("two replays differ:\n%s", sb.String())
	}
	if start := a[0].Payload.(*trajectory.SessionStart); start.ReplayOf != readEvents(t, rec)[0].Session || start.Mode != trajectory.ModeReplay {
		t.Fatalf("session_start of the replay: replay_of %q mode %s", start.ReplayOf, start.Mode)
	}
}

func TestAWhatIfConfigNamesTheCallWhoseOutcomeChanged(t *testing.T) {
	rec := recordDemo(t)
	cfg := filepath.Join(t.TempDir(), "stricter.yaml")
	os.WriteFile(cfg, []byte("permissions:\n  mode: accept_edits\n  deny: [\"Edit(calc.go)\"]\n"), 0o644)
	code, stdout, _ := runCLI(t, nil, "replay", rec, "--out", t.TempDir(), "--config", cfg, "--strict")
	if code != ExitGate {
		t.Fatalf("exit %d, want 3 with --strict\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "what-if: turn 2, toolu_demo_3: allowed → denied by rule Edit(calc.go)") {
		t.Fatalf("the report does not name the changed call:\n%s", stdout)
	}
	if !strings.Contains(stdout, "later requests differ because of the change above") {
		t.Fatalf("the report should say once that later requests can no longer match:\n%s", stdout)
	}
}

func TestReplayRejectsWhatCannotBeReplayed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a missing recording", []string{"replay", filepath.Join(dir, "none.jsonl"), "--out", t.TempDir()}, "no such file"},
		{"a recording of an unknown version", []string{"replay", "../../trajectory/testdata/invalid/unknown_version.jsonl", "--out", t.TempDir()}, "unsupported trajectory version"},
		{"a recording without a workspace snapshot", []string{"replay", "../../trajectory/testdata/valid/basic.jsonl", "--out", t.TempDir()}, "no workspace snapshot"},
		{"no recording", []string{"replay"}, "give the recorded trajectories to replay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, nil, c.args...)
			if code != ExitInvalid || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d stderr %q, want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func TestReplayOfDamagedRecordingsSaysWhatIsWrongAndWritesNothingOverThem(t *testing.T) {
	t.Run("a missing blob names the file and the blob", func(t *testing.T) {
		rec := recordDemo(t)
		// Remove the workspace snapshot's manifest: the blob every replay needs.
		ref := readEvents(t, rec)[1].Payload.(*trajectory.WorkspaceSnapshot).Manifest
		manifest := filepath.Join(strings.TrimSuffix(rec, ".jsonl")+".blobs", strings.TrimPrefix(ref, "sha256:"))
		if err := os.Remove(manifest); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(rec)
		code, _, stderr := runCLI(t, nil, "replay", rec, "--out", t.TempDir())
		after, _ := os.ReadFile(rec)
		if code != ExitInvalid || !strings.Contains(stderr, "sha256:") || string(before) != string(after) {
			t.Fatalf("exit %d stderr %q (recording unchanged: %v)", code, stderr, string(before) == string(after))
		}
	})
	t.Run("a recording whose responses run out ends in a replay miss, reported as a divergence", func(t *testing.T) {
		rec := recordDemo(t)
		data, _ := os.ReadFile(rec)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var kept []string
		responses := 0
		for _, l := range lines {
			if strings.Contains(l, `"type":"model_response"`) {
				responses++
				if responses == 4 {
					continue // drop the last response
				}
			}
			kept = append(kept, l)
		}
		cut := filepath.Join(filepath.Dir(rec), "cut.jsonl")
		os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
		os.Symlink(strings.TrimSuffix(rec, ".jsonl")+".blobs", filepath.Join(filepath.Dir(rec), "cut.blobs"))
		code, stdout, stderr := runCLI(t, nil, "replay", cut, "--out", t.TempDir(), "--strict")
		if code != ExitGate || !strings.Contains(stdout, "end_changed") {
			t.Fatalf("exit %d, want 3\nstdout %s\nstderr %s", code, stdout, stderr)
		}
	})
	t.Run("a torn last line still replays the events before it", func(t *testing.T) {
		rec := recordDemo(t)
		data, _ := os.ReadFile(rec)
		torn := filepath.Join(filepath.Dir(rec), "torn.jsonl")
		os.WriteFile(torn, data[:len(data)-40], 0o644)
		os.Symlink(strings.TrimSuffix(rec, ".jsonl")+".blobs", filepath.Join(filepath.Dir(rec), "torn.blobs"))
		code, _, stderr := runCLI(t, nil, "replay", torn, "--out", t.TempDir())
		if code != ExitOK {
			t.Fatalf("exit %d stderr %q", code, stderr)
		}
	})
}
