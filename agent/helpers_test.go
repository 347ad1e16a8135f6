package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// cronTool is a deferred tool, declared the way an MCP tool would be.
type cronTool struct{}

type cronInput struct {
	Schedule string `json:"schedule" jsonschema:"minLength=1" jsonschema_description:"A cron expression."`
}

func (cronTool) Spec() tools.Spec {
	return tools.Spec{Name: "cron_create", Description: "Creates a scheduled job. It runs until deleted.",
		Schema: tools.SchemaFor[cronInput](), Deferred: true, Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}
func (cronTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (cronTool) Run(_ context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: "job created"}, nil
}

// recorded is one recorded run of the loop over a script.
type recorded struct {
	res    Result
	events []trajectory.Event
	script *mockllm.Script
	ws     string
}

type runOpts struct {
	cfg    func(*Config)
	ctx    context.Context
	extra  []tools.Tool
	files  map[string]string
	verify bool // the script must be used up with every expectation met
}

// newRegistry is the production construction of a session's tools: the
// built-ins in their fixed order, then the extra tools.
func newRegistry(t testing.TB, extra ...tools.Tool) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(append(tools.Builtins(), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// runScript runs the loop over testdata/<name>.yaml in a fresh workspace,
// records to a buffer and fails the test unless the trajectory validates
// with no problems: every test checks every trajectory it writes.
func runScript(t *testing.T, name string, o runOpts) recorded {
	t.Helper()
	script, err := mockllm.LoadScript(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	files := map[string]string{"README.md": "retrace is a flight recorder for agents.\n", "build.log": "error: one\nok\nerror: two\n",
		"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}
	for k, v := range o.files {
		files[k] = v
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, ws, script, rec, o.extra...)
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	ctx := o.ctx
	if ctx == nil {
		ctx = t.Context()
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatalf("recorder: %v", err)
	}
	validate(t, buf.Bytes())
	if o.verify {
		if err := script.Verify(); err != nil {
			t.Errorf("script: %v", err)
		}
	}
	return recorded{res: res, events: decode(t, buf.Bytes()), script: script, ws: ws}
}

// baseConfig assembles a session by hand. Everywhere else a session is
// built by the harness package (harness.Build); these internal tests
// cannot use it, because harness imports agent. Keep this in step with
// harness.Build: the built-in tools first, the permission checker over the
// workspace, the blobs, and the loop's defaults for the rest.
func baseConfig(t testing.TB, ws string, script *mockllm.Script, sink trajectory.Sink, extra ...tools.Tool) Config {
	t.Helper()
	env, err := tools.NewEnv(ws, newRegistry(t, extra...))
	if err != nil {
		t.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Mode: trajectory.PermBypass, Home: t.TempDir()}, env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Provider:       script,
		Executor:       executor.Config{Env: env, Permission: perm, Blobs: recorder.OpenBlobs(filepath.Join(t.TempDir(), "blobs"))},
		Sink:           sink,
		System:         "You are a careful coding agent.",
		Prompt:         "Read the README and summarise it.",
		PermissionMode: trajectory.PermBypass,
	}
}

func validate(t testing.TB, data []byte) {
	t.Helper()
	rep, err := trajectory.ValidateStream(bytes.NewReader(data), "session")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("trajectory problem: %v", p)
	}
	for _, w := range rep.Warnings {
		t.Errorf("trajectory warning: %v", w)
	}
	if t.Failed() {
		t.Logf("trajectory:\n%s", data)
	}
}

func decode(t testing.TB, data []byte) []trajectory.Event {
	t.Helper()
	dec := trajectory.NewDecoder(bytes.NewReader(data), "session")
	var out []trajectory.Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func payloads[T trajectory.Payload](evs []trajectory.Event) []T {
	var out []T
	for _, e := range evs {
		if p, ok := e.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// triggers returns the actions of the defense_trigger events of one defense.
func triggers(evs []trajectory.Event, d trajectory.DefenseName) []trajectory.DefenseAction {
	var out []trajectory.DefenseAction
	for _, p := range payloads[*trajectory.DefenseTrigger](evs) {
		if p.Defense == d {
			out = append(out, p.Action)
		}
	}
	return out
}

func sessionEnd(t testing.TB, evs []trajectory.Event) *trajectory.SessionEnd {
	t.Helper()
	ends := payloads[*trajectory.SessionEnd](evs)
	if len(ends) != 1 {
		t.Fatalf("want one session_end, got %d", len(ends))
	}
	return ends[0]
}

func joined(as []trajectory.DefenseAction) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ",")
}

// startMock serves script from the mock LLM on a loopback port for the
// test's lifetime and returns its base URL.
func startMock(t testing.TB, script *mockllm.Script) string {
	t.Helper()
	srv := mockllm.NewServer(script, mockllm.Options{})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return url
}

// runRecorded runs cfg, whose sink is rec writing to buf, closes the
// recorder, checks the trajectory validates and returns it decoded.
func runRecorded(t testing.TB, cfg Config, rec *recorder.Recorder, buf *bytes.Buffer) (Result, []trajectory.Event) {
	t.Helper()
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	return res, decode(t, buf.Bytes())
}
