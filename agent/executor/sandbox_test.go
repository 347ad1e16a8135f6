package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/trajectory"
)

// sandboxDenies returns the permission_deny events with source sandbox.
func sandboxDenies(evs []trajectory.Event) []*trajectory.PermissionDeny {
	var out []*trajectory.PermissionDeny
	for _, d := range payloads[*trajectory.PermissionDeny](evs) {
		if d.Source == trajectory.SourceSandbox {
			out = append(out, d)
		}
	}
	return out
}

func TestWithoutLandlockBashRefusesToRunAndSaysHowToOptOut(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	box, err := sandbox.New(sandbox.Options{Workspace: h.ws, Home: t.TempDir(),
		Probe: func() (int, error) { return 0, errors.New("Landlock is not enabled (simulated)") }})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	h.ex.cfg.Env.SetSandbox(box)
	res := h.turnWith(context.Background(), use("b1", "bash", `{"command":"touch ran"}`))
	text := res[0].Content
	for _, want := range []string{"simulated", "sandbox: {mode: off}", "--no-sandbox"} {
		if !strings.Contains(text, want) {
			t.Errorf("the result does not say %q:\n%s", want, text)
		}
	}
	if !res[0].IsError {
		t.Error("the refusal is not an error")
	}
	if _, err := os.Stat(filepath.Join(h.ws, "ran")); err == nil {
		t.Fatal("the command ran without a sandbox")
	}
	evs := h.events()
	if f := failureOf(t, evs, "b1"); f.FailureKind != trajectory.FailurePermissionDenied || f.ErrorCode != "sandbox_unavailable" {
		t.Errorf("failure %s %s, want permission_denied sandbox_unavailable", f.FailureKind, f.ErrorCode)
	}
	if n := len(sandboxDenies(evs)); n != 1 {
		t.Errorf("%d permission_deny events with source sandbox, want 1", n)
	}
}

func TestAWriteTheSandboxRefusesIsAPermissionDenialWithSourceSandbox(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	box, err := sandbox.New(sandbox.Options{Workspace: h.ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if err := box.Unavailable(); err != nil {
		t.Skip(err)
	}
	h.ex.cfg.Env.SetSandbox(box)
	// A project's script: the permission chain sees only `bash setup.sh`.
	if err := os.WriteFile(filepath.Join(h.ws, "setup.sh"), []byte("echo pwned >> \"$HOME/.bashrc\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := h.turnWith(context.Background(), use("b1", "bash", `{"command":"bash setup.sh"}`))
	res = append(res, h.turnWith(context.Background(), use("b2", "bash", `{"command":"echo fine > ok.txt"}`))...)
	if text := res[0].Content; !strings.Contains(text, "[sandbox] The sandbox refused access to "+filepath.Join(home, ".bashrc")) || !strings.Contains(text, h.ws) {
		t.Errorf("the result does not say the sandbox refused and what is writable:\n%s", text)
	}
	if res[1].IsError {
		t.Errorf("a workspace write failed: %s", res[1].Content)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# rc\n" {
		t.Fatalf(".bashrc changed: %q", b)
	}
	evs := h.events()
	denies := sandboxDenies(evs)
	if len(denies) != 1 || denies[0].ToolUseID != "b1" || denies[0].Step != trajectory.StepSandbox {
		t.Fatalf("sandbox denials %+v, want one for b1 at step sandbox", denies)
	}
	if f := failureOf(t, evs, "b1"); f.FailureKind != trajectory.FailurePermissionDenied || f.ErrorCode != "sandbox" {
		t.Errorf("failure %s %s, want permission_denied sandbox", f.FailureKind, f.ErrorCode)
	}
}
