package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestEverySessionRecordsItsSandboxAndWarnsOfHardLinks(t *testing.T) {
	spec := testSpec(t, doneScript)
	outside := filepath.Join(t.TempDir(), "store.txt")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(spec.Workspace, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	spec.Warn = func(msg string) { warnings = append(warnings, msg) }
	start := sessionStart(t, spec)
	if start.Sandbox == nil {
		t.Fatal("session_start does not record the sandbox")
	}
	switch start.Sandbox.Mode {
	case trajectory.SandboxWorkspaceWrite:
		if !strings.Contains(strings.Join(warnings, "\n"), "linked.txt") {
			t.Errorf("no warning names the hard-linked file: %q", warnings)
		}
	case trajectory.SandboxUnavailable:
		if start.Sandbox.Reason == "" || !strings.Contains(strings.Join(warnings, "\n"), "--no-sandbox") {
			t.Errorf("an unavailable sandbox without its reason and how to opt out: %+v, %q", start.Sandbox, warnings)
		}
	default:
		t.Errorf("sandbox mode %q, want workspace-write (or unavailable on this kernel)", start.Sandbox.Mode)
	}

	spec = testSpec(t, doneScript)
	spec.Config.Sandbox.Mode = sandbox.ModeOff
	if off := sessionStart(t, spec); off.Sandbox == nil || off.Sandbox.Mode != trajectory.SandboxOff {
		t.Errorf("sandbox off is recorded as %+v", off.Sandbox)
	}
}
