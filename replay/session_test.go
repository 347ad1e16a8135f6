package replay

import (
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
)

// recordOpts declare a session of the test suite to record.
type recordOpts struct {
	// script is the mock model's YAML script; name names it in messages.
	script []byte
	name   string
	// ws is the workspace; its retrace.yaml, when it has one, is the
	// session's trusted configuration, and over it come the defenses and
	// limits given here.
	ws       string
	defenses config.Defenses
	maxTurns int
	stream   bool
	system   string
	prompt   string
	prompter executor.Prompter
	snap     recorder.SnapshotOptions
	// runs is where the recording is written; "" is a new temporary directory.
	runs string
	// key, when set, signs the recording as its user's own.
	key *recorder.Key
}

// recordSession records a scripted session the way retrace run does:
// through the session builder, with the workspace snapshot taken after
// session_start, and returns the recording's path.
func recordSession(tb testing.TB, o recordOpts) string {
	tb.Helper()
	script, err := mockllm.ParseScript(o.script, o.name)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := config.Resolve(config.Sources{Workspace: filepath.Join(o.ws, config.FileName), TrustWorkspace: true})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := config.Overlay(res.Config, config.Config{Defenses: o.defenses})
	if o.maxTurns > 0 {
		cfg.Limits.MaxTurns = o.maxTurns
	}
	if o.prompt == "" {
		o.prompt = "Read the README and summarise it."
	}
	if o.runs == "" {
		o.runs = filepath.Join(tb.TempDir(), "runs")
	}
	snap := o.snap
	sess, err := harness.Build(tb.Context(), harness.Spec{Workspace: o.ws, Config: cfg, ConfigName: res.Name(), ConfigSources: res.Sources, Key: o.key,
		Provider: script, Stream: o.stream, System: o.system, Prompt: o.prompt, Prompter: o.prompter, Runs: o.runs, Snapshot: &snap})
	if err != nil {
		tb.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Run(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	if _, err := sess.Close(); err != nil {
		tb.Fatal(err)
	}
	return sess.Recorder.Path()
}
