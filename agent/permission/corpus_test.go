package permission_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// corpusPath is the shell package's adversarial corpus: one JSON object a
// line, each command labelled read_only, dangerous or other (neither).
const corpusPath = "../shell/testdata/corpus.jsonl"

type corpusEntry struct {
	Label  string `json:"label"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
	Cmd    string `json:"cmd"`
	line   int
}

func loadCorpus(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatalf("the bash corpus is missing (%v): it is %s, written by the shell package", err, corpusPath)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e corpusEntry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s:%d: %v", corpusPath, n, err)
		}
		switch e.Label {
		case "read_only", "dangerous", "other":
		default:
			t.Fatalf("%s:%d: label %q; use read_only, dangerous or other", corpusPath, n, e.Label)
		}
		if e.Cmd == "" {
			t.Fatalf("%s:%d: the command is empty", corpusPath, n)
		}
		e.line = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", corpusPath, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no command", corpusPath)
	}
	return out
}

var modes = []trajectory.PermissionMode{trajectory.PermDefault, trajectory.PermPlan, trajectory.PermAcceptEdits, trajectory.PermBypass}

func bashRequest(cmd string) permission.Request {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return permission.Request{Tool: "bash", Command: cmd, Input: in}
}

// corpusWorkspace is a workspace with a few ordinary files, so that paths
// in the corpus resolve against something real.
func corpusWorkspace(t *testing.T) (ws, home string) {
	t.Helper()
	root := t.TempDir()
	ws, home = filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws + "/src", ws + "/.git/hooks", home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{ws + "/main.go", ws + "/README.md", ws + "/src/a.go"} {
		if err := os.WriteFile(p, []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws, home
}

func TestEveryCorpusCommandThroughTheChainInEveryMode(t *testing.T) {
	corpus := loadCorpus(t)
	ws, home := corpusWorkspace(t)
	for _, m := range modes {
		c, err := permission.New(permission.Config{Mode: m, Home: home}, ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range corpus {
			d := c.Check(bashRequest(e.Cmd))
			where := fmt.Sprintf("%s:%d (%s, %s) in %s mode: %q", corpusPath, e.line, e.Label, e.Class, m, e.Cmd)
			if e.Label != "read_only" && d.Behavior == permission.Allow && d.Source == trajectory.SourceReadOnly {
				t.Errorf("%s was allowed as read-only", where)
			}
			if e.Label == "dangerous" && d.Behavior != permission.Deny {
				t.Errorf("%s was not denied: %s/%s %s", where, d.Behavior, d.Step, d.Reason)
			}
			if e.Label != "dangerous" && d.Step == trajectory.StepDangerousCommand {
				t.Errorf("%s was hard-blocked as dangerous: %s", where, d.Reason)
			}
		}
	}
}

// inertBash is the real bash tool's declarations, command and concurrency
// predicate with a Run that records the command instead of running it:
// the corpus holds rm -rf / and reverse shells.
type inertBash struct {
	tools.BashTool
	mu  sync.Mutex
	ran map[string]int
}

func (b *inertBash) Run(_ context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ran[b.Command(input)]++
	return tools.Result{Output: "not run"}, nil
}

// yes is a person who approves every question: the worst case for a
// hard block, which must hold even then.
type yes struct{}

func (yes) Confirm(context.Context, executor.Prompt) (bool, error) { return true, nil }

func TestEveryCorpusCommandThroughTheExecutorHeadlessAndInteractive(t *testing.T) {
	corpus := loadCorpus(t)
	for _, m := range modes {
		for _, interactive := range []bool{false, true} {
			name := fmt.Sprintf("%s mode, headless", m)
			if interactive {
				name = fmt.Sprintf("%s mode, interactive with a person who approves everything", m)
			}
			t.Run(name, func(t *testing.T) {
				ws, home := corpusWorkspace(t)
				bashTool := &inertBash{ran: map[string]int{}}
				reg, err := tools.NewRegistry(bashTool)
				if err != nil {
					t.Fatal(err)
				}
				env, err := tools.NewEnv(ws, reg)
				if err != nil {
					t.Fatal(err)
				}
				perm, err := permission.New(permission.Config{Mode: m, Home: home, FuseThreshold: 1000}, env.Workspace())
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				rec := recorder.New(&buf, recorder.Options{})
				var prompter executor.Prompter
				if interactive {
					prompter = yes{}
				}
				ex, err := executor.New(executor.Config{Env: env, Permission: perm, Sink: rec,
					Blobs: recorder.OpenBlobs(filepath.Join(t.TempDir(), "blobs")), Prompter: prompter})
				if err != nil {
					t.Fatal(err)
				}
				for i, e := range corpus {
					in, _ := json.Marshal(map[string]string{"command": e.Cmd})
					ex.Execute(context.Background(), i+1, []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: fmt.Sprintf("toolu_%d", i), Name: "bash", Input: in}})
				}
				if _, err := rec.Close(); err != nil {
					t.Fatal(err)
				}
				decisions := map[string][]trajectory.PermissionDecision{}
				dec := trajectory.NewDecoder(bytes.NewReader(buf.Bytes()), "session.jsonl")
				for {
					ev, err := dec.Next()
					if err != nil {
						break
					}
					switch p := ev.Payload.(type) {
					case *trajectory.PermissionAllow:
						decisions[p.ToolUseID] = append(decisions[p.ToolUseID], p.PermissionDecision)
					case *trajectory.PermissionDeny:
						decisions[p.ToolUseID] = append(decisions[p.ToolUseID], p.PermissionDecision)
					}
				}
				for i, e := range corpus {
					where := fmt.Sprintf("%s:%d (%s, %s): %q", corpusPath, e.line, e.Label, e.Class, e.Cmd)
					ds := decisions[fmt.Sprintf("toolu_%d", i)]
					if len(ds) == 0 {
						t.Errorf("%s has no permission decision", where)
					}
					for _, d := range ds {
						if e.Label != "read_only" && d.Source == trajectory.SourceReadOnly {
							t.Errorf("%s was allowed as read-only", where)
						}
						if e.Label != "dangerous" && d.Step == trajectory.StepDangerousCommand {
							t.Errorf("%s was hard-blocked as dangerous", where)
						}
					}
					if e.Label == "dangerous" && bashTool.ran[e.Cmd] > 0 {
						t.Errorf("%s ran", where)
					}
				}
			})
		}
	}
}
