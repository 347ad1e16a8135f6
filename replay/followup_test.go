package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

const chatScript = `turns:
  - expect: {last_user_contains: "Read the README"}
    content: [{tool_use: {id: toolu_1, name: read, input: {file_path: README.md}}}]
  - content: [{text: "It describes a tiny project."}]
  - expect: {last_user_contains: "Now write NOTES.md"}
    content: [{tool_use: {id: toolu_2, name: write, input: {file_path: NOTES.md, content: "tiny\n"}}}]
  - content: [{text: "Written."}]
`

// recordFollowUp records a scripted session as retrace run does, with the
// given follow-ups, or carrying on the conversation of the recording cont.
func recordFollowUp(t *testing.T, ws, runs, script, prompt string, followUps []string, cont string) string {
	t.Helper()
	provider, err := mockllm.ParseScript([]byte(script), "script")
	if err != nil {
		t.Fatal(err)
	}
	res, err := config.Resolve(config.Sources{Workspace: filepath.Join(ws, config.FileName), TrustWorkspace: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := harness.Spec{Workspace: ws, Config: res.Config, ConfigName: res.Name(), Provider: provider, Prompt: prompt, Runs: runs,
		Snapshot: &recorder.SnapshotOptions{}}
	if len(followUps) > 0 {
		spec.NextPrompt = func(context.Context) (string, bool) {
			if len(followUps) == 0 {
				return "", false
			}
			p := followUps[0]
			followUps = followUps[1:]
			return p, true
		}
	}
	if cont != "" {
		events, err := trajectory.ReadFile(cont)
		if err != nil {
			t.Fatal(err)
		}
		if spec.History, err = agent.ConversationOf(events); err != nil {
			t.Fatal(err)
		}
		spec.Continues = events[0].Session
	}
	sess, err := harness.Build(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if res, err := sess.Run(t.Context()); err != nil || res.Reason != trajectory.EndTurn {
		t.Fatalf("session: %+v %v", res, err)
	}
	if _, err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	return sess.Recorder.Path()
}

// replayWithItsLink replays recording and fails unless the replay has no
// divergence and keeps the recording's config hash and continued session.
func replayWithItsLink(t *testing.T, recording string) {
	t.Helper()
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		t.Fatalf("the replay of %s diverges: %+v", recording, res.Report)
	}
	if rec, rep := startOf(t, recording), startOf(t, res.Path); rec.ConfigHash != rep.ConfigHash || rec.Continues != rep.Continues {
		t.Fatalf("session_start recorded %+v, replayed %+v", rec, rep)
	}
}

func TestASessionOfSeveralPromptsReplaysWithItsFollowUps(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"README.md": "A tiny project.\n", config.FileName: "permissions:\n  allow: [Write]\n"})
	rec := recordFollowUp(t, ws, filepath.Join(t.TempDir(), "runs"), chatScript, "Read the README.", []string{"Now write NOTES.md."}, "")
	replayWithItsLink(t, rec)
}

func TestAContinuedSessionReplaysFromTheConversationItContinues(t *testing.T) {
	ws, runs := t.TempDir(), filepath.Join(t.TempDir(), "runs")
	writeFiles(t, ws, map[string]string{"README.md": "A tiny project.\n", config.FileName: "permissions:\n  allow: [Write]\n"})
	first := recordFollowUp(t, ws, runs, `turns:
  - content: [{tool_use: {id: toolu_1, name: read, input: {file_path: README.md}}}]
  - content: [{text: "It describes a tiny project."}]
`, "Read the README.", nil, "")
	second := recordFollowUp(t, ws, runs, `turns:
  - expect: {last_user_contains: "Now write NOTES.md"}
    content: [{tool_use: {id: toolu_2, name: write, input: {file_path: NOTES.md, content: "tiny\n"}}}]
  - content: [{text: "Written."}]
`, "Now write NOTES.md.", nil, first)
	replayWithItsLink(t, second)

	// Without the session it continues next to it, the continued
	// recording cannot be replayed, and the error says what to do.
	alone := filepath.Join(t.TempDir(), filepath.Base(second))
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), RunOptions{Recording: alone, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if !errors.Is(err, ErrNotReplayable) {
		t.Fatalf("replay of a continued recording alone: %v, want ErrNotReplayable", err)
	}
}
