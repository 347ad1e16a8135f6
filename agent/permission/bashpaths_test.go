package permission

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/trajectory"
)

// linkFixture adds the symlinks of the escape routes to the fixture:
// l points inside (to d1/d2), so l/../../x is the workspace's x for the
// kernel and ../x lexically.
func linkFixture(t *testing.T) fixture {
	t.Helper()
	f := newFixture(t)
	for _, d := range []string{"d1/d2", "outside", "deploy", "empty"} {
		if err := os.MkdirAll(filepath.Join(f.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("d1/d2", filepath.Join(f.ws, "l")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(f.ws, "outside", "x"), filepath.Join(f.ws, "a.go"), filepath.Join(f.ws, "b.go"), filepath.Join(f.ws, "deploy", "run.sh")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// analysed is a bash request whose analysis the test gives: the fields
// the shell package promises (Reads, Writes, WritesUnknown), so the chain
// is tested against the contract whatever today's Analyze fills in.
type analysed struct {
	req Request
	a   shell.Analysis
}

func bashWith(cmd string, edit func(*shell.Analysis)) analysed {
	a := shell.Analyze(cmd)
	edit(&a)
	return analysed{bash(cmd), a}
}

func reads(paths ...string) func(*shell.Analysis) {
	return func(a *shell.Analysis) { a.Reads = paths }
}

func writes(paths ...string) func(*shell.Analysis) {
	return func(a *shell.Analysis) {
		a.Writes = paths
		a.ReadOnly = false
		if a.Why == "" {
			a.Why = "it writes files"
		}
	}
}

func TestBashPathsAreCheckedLikeTheFileToolsPaths(t *testing.T) {
	f := linkFixture(t)
	tests := []struct {
		name   string
		cfg    Config
		call   analysed
		want   Behavior
		source trajectory.PermissionSource
		step   trajectory.ChainStep
	}{
		// Reads of read-only commands.
		{"a read-only command reading inside the workspace is allowed", Config{}, bashWith("cat main.go", reads("main.go")), Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck},
		{"a read-only command reading outside the workspace needs confirmation", Config{}, bashWith("cat ../outside/notes.txt", reads("../outside/notes.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read-only command reading an absolute path outside needs confirmation in bypass mode", Config{Mode: trajectory.PermBypass}, bashWith("cat "+f.outside+"/notes.txt", reads(f.outside+"/notes.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read through a symlink leading out needs confirmation", Config{}, bashWith("cat escape/notes.txt", reads("escape/notes.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read through a symlink pointing inside whose dot-dot stays inside is allowed", Config{}, bashWith("cat l/../../outside/x", reads("l/../../outside/x")), Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck},
		{"a read through a symlink pointing inside whose dot-dot leads out needs confirmation", Config{}, bashWith("cat l/../../../outside/notes.txt", reads("l/../../../outside/notes.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read of ~/.ssh needs confirmation", Config{}, bashWith("cat ~/.ssh/id_rsa", reads("~/.ssh/id_rsa")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read of the home directory needs confirmation", Config{}, bashWith("ls ~", reads("~")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read of .env in the workspace needs confirmation", Config{}, bashWith("cat .env", reads(".env")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a glob read inside the workspace is allowed", Config{}, bashWith("wc -l *.go", reads("*.go")), Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck},
		{"a glob read whose directory is outside needs confirmation", Config{}, bashWith("cat ../outside/*.txt", reads("../outside/*.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a glob that could match dot-dot needs confirmation", Config{}, bashWith("cat .*/notes.txt", reads(".*/notes.txt")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a glob through ~/.ssh needs confirmation", Config{}, bashWith("cat ~/.ssh/*", reads("~/.ssh/*")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a read only known at run time needs confirmation", Config{}, bashWith(`cat "$F"`, reads("$F")), Ask, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a Read deny rule covers what a bash command reads", Config{Deny: []string{"Read(src/**)"}}, bashWith("cat src/x", reads("src/x")), Deny, trajectory.SourceRule, trajectory.StepDenyRule},
		{"a Read ask rule covers what a bash command reads", Config{Ask: []string{"Read(*.go)"}}, bashWith("cat a.go", reads("a.go")), Ask, trajectory.SourceRule, trajectory.StepAskRule},
		{"a read below a directory given to AllowReads is not asked", Config{}, bashWith("cat "+f.home+"/blobs/x", reads(f.home+"/blobs/x")), Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck},
		// Write targets of writing commands.
		{"a copy into the workspace is allowed in bypass mode", Config{Mode: trajectory.PermBypass}, bashWith("cp a.go c.go", writes("c.go")), Allow, trajectory.SourceMode, trajectory.StepBypassMode},
		{"a copy out of the workspace is denied in bypass mode", Config{Mode: trajectory.PermBypass}, bashWith("cp a.go ../outside/c.go", writes("../outside/c.go")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a copy out of the workspace is denied even with an allow-all bash rule", Config{Allow: []string{"Bash"}}, bashWith("cp a.go ../outside/c.go", writes("../outside/c.go")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a move through a symlink pointing inside whose dot-dot leads out is denied", Config{Mode: trajectory.PermBypass}, bashWith("mv a.go l/../../../outside/a.go", writes("a.go", "l/../../../outside/a.go")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a touch through a dangling symlink pointing outside is denied", Config{Mode: trajectory.PermAcceptEdits}, bashWith("touch dangling", writes("dangling")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"a tee into ~ is denied", Config{Mode: trajectory.PermBypass}, bashWith("echo x | tee ~/notes.txt", writes("~/notes.txt")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"an rm with a glob outside the workspace is denied", Config{Mode: trajectory.PermBypass}, bashWith("rm ../outside/*.txt", writes("../outside/*.txt")), Deny, trajectory.SourceSafety, trajectory.StepPathValidation},
		{"an rm with a glob matching a protected file needs confirmation in bypass mode", Config{Mode: trajectory.PermBypass, ProtectedPaths: []string{"deploy/**"}}, bashWith("rm deploy/*", writes("deploy/*")), Ask, trajectory.SourceSafety, trajectory.StepProtectedPath},
		{"an rm with a glob inside the workspace is allowed in bypass mode", Config{Mode: trajectory.PermBypass}, bashWith("rm *.go", writes("*.go")), Allow, trajectory.SourceMode, trajectory.StepBypassMode},
		{"an rm with a glob in an empty protected directory needs confirmation in bypass mode", Config{Mode: trajectory.PermBypass, ProtectedPaths: []string{"empty/**"}}, bashWith("rm empty/*", writes("empty/*")), Ask, trajectory.SourceSafety, trajectory.StepProtectedPath},
		{"a chmod of a protected path needs confirmation in bypass mode", Config{Mode: trajectory.PermBypass, ProtectedPaths: []string{"deploy/**"}}, bashWith("chmod +x deploy/run.sh", writes("deploy/run.sh")), Ask, trajectory.SourceSafety, trajectory.StepProtectedPath},
		{"an Edit deny rule covers what a bash command writes", Config{Mode: trajectory.PermBypass, Deny: []string{"Edit(src/**)"}}, bashWith("cp a.go src/a.go", writes("src/a.go")), Deny, trajectory.SourceRule, trajectory.StepDenyRule},
		{"a Write deny rule covers what sed -i writes", Config{Mode: trajectory.PermBypass, Deny: []string{"Write(*.go)"}}, bashWith("sed -i s/a/b/ a.go", writes("a.go")), Deny, trajectory.SourceRule, trajectory.StepDenyRule},
		{"an Edit ask rule covers what a bash command writes", Config{Mode: trajectory.PermBypass, Ask: []string{"Edit(*.go)"}}, bashWith("touch new.go", writes("new.go")), Ask, trajectory.SourceRule, trajectory.StepAskRule},
		{"an Edit allow rule does not allow a bash command", Config{Allow: []string{"Edit(*.go)"}}, bashWith("touch new.go", writes("new.go")), Ask, trajectory.SourceMode, trajectory.StepDefault},
		{"a Read rule does not cover what a bash command writes", Config{Mode: trajectory.PermBypass, Deny: []string{"Read(*.go)"}}, bashWith("touch new.go", writes("new.go")), Allow, trajectory.SourceMode, trajectory.StepBypassMode},
		{"accept_edits does not allow a bash write inside the workspace", Config{Mode: trajectory.PermAcceptEdits}, bashWith("touch new.go", writes("new.go")), Ask, trajectory.SourceMode, trajectory.StepDefault},
		{"a write target only known at run time is allowed in bypass mode like any command that may write anywhere", Config{Mode: trajectory.PermBypass}, bashWith(`cp a "$DST"`, func(a *shell.Analysis) { a.WritesUnknown, a.ReadOnly = true, false }), Allow, trajectory.SourceMode, trajectory.StepBypassMode},
		{"a write target only known at run time asks in accept_edits mode", Config{Mode: trajectory.PermAcceptEdits}, bashWith(`cp a "$DST"`, func(a *shell.Analysis) { a.WritesUnknown, a.ReadOnly = true, false }), Ask, trajectory.SourceMode, trajectory.StepDefault},
		// WritesUnknown.
		{"a command that may write unknown files is never read-only", Config{}, bashWith("ls", func(a *shell.Analysis) { a.WritesUnknown = true }), Ask, trajectory.SourceMode, trajectory.StepDefault},
		{"a command that may write unknown files is not allowed by accept_edits", Config{Mode: trajectory.PermAcceptEdits}, bashWith("make", func(a *shell.Analysis) { a.WritesUnknown = true }), Ask, trajectory.SourceMode, trajectory.StepDefault},
		{"a command that may write unknown files is denied in plan mode", Config{Mode: trajectory.PermPlan}, bashWith("ls", func(a *shell.Analysis) { a.WritesUnknown = true }), Deny, trajectory.SourceMode, trajectory.StepPlanMode},
		{"a command with a write target is never read-only even if the analysis says so", Config{}, bashWith("ls", func(a *shell.Analysis) { a.Writes = []string{"x"} }), Ask, trajectory.SourceMode, trajectory.StepDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.checker(t, tt.cfg)
			c.AllowReads(filepath.Join(f.home, "blobs"))
			got := c.check(tt.call.req, &tt.call.a)
			if got.Behavior != tt.want || got.Source != tt.source || got.Step != tt.step {
				t.Errorf("Check = %s/%s/%s (%s), want %s/%s/%s", got.Behavior, got.Source, got.Step, got.Reason, tt.want, tt.source, tt.step)
			}
			if got.Behavior != Allow && got.Reason == "" {
				t.Errorf("a %s without a reason for the model", got.Behavior)
			}
		})
	}
}

func TestFileToolPathsDoNotExpandTilde(t *testing.T) {
	// A tool given ~/x opens the workspace's ~/x (only bash expands ~), so
	// that is what is checked; the home directory is reached by its path.
	f := newFixture(t)
	c := f.checker(t, Config{})
	if d := c.Check(edit("~/notes.txt")); d.Behavior != Ask || d.Step != trajectory.StepDefault {
		t.Errorf("edit ~/notes.txt = %s/%s (%s), want the default ask for an edit inside the workspace", d.Behavior, d.Step, d.Reason)
	}
	if d := c.Check(edit(filepath.Join(f.home, "notes.txt"))); d.Behavior != Deny || d.Step != trajectory.StepPathValidation {
		t.Errorf("edit of the home directory by path = %s/%s, want a path-validation deny", d.Behavior, d.Step)
	}
	if d := c.Check(read(filepath.Join(f.home, ".ssh", "config"))); d.Behavior != Ask || d.Step != trajectory.StepPathValidation {
		t.Errorf("read of ~/.ssh by path = %s/%s, want a path-validation ask", d.Behavior, d.Step)
	}
}

// The redirection targets are analysed today, so these go through the
// real Analyze end to end.
func TestBashRedirectionsThroughTheRealAnalysis(t *testing.T) {
	f := linkFixture(t)
	tests := []struct {
		name string
		mode trajectory.PermissionMode
		cmd  string
		want Behavior
		step trajectory.ChainStep
	}{
		{"a redirection through a symlink pointing inside whose dot-dot leads out is denied in bypass mode", trajectory.PermBypass, "echo x > l/../../../outside/y", Deny, trajectory.StepPathValidation},
		{"a redirection through a symlink pointing inside whose dot-dot stays inside is allowed in bypass mode", trajectory.PermBypass, "echo x > l/../../outside/y", Allow, trajectory.StepBypassMode},
		{"a redirection through a dangling link pointing outside is denied in bypass mode", trajectory.PermBypass, "echo x > dangling", Deny, trajectory.StepPathValidation},
		{"a redirection to an absolute path outside is denied in accept_edits mode", trajectory.PermAcceptEdits, "echo x > " + f.outside + "/y", Deny, trajectory.StepPathValidation},
		{"an appending redirection into ~ is denied in bypass mode", trajectory.PermBypass, "echo x >> ~/notes.txt", Deny, trajectory.StepPathValidation},
		{"a redirection into a protected path through a symlink needs confirmation in bypass mode", trajectory.PermBypass, "echo x > l/../../deploy/x", Ask, trajectory.StepProtectedPath},
		{"a redirection into the workspace asks in default mode", trajectory.PermDefault, "echo x > out.txt", Ask, trajectory.StepDefault},
		{"a redirection is not read-only in plan mode", trajectory.PermPlan, "echo x > out.txt", Deny, trajectory.StepPlanMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.checker(t, Config{Mode: tt.mode, ProtectedPaths: []string{"deploy/**"}})
			if got := c.Check(bash(tt.cmd)); got.Behavior != tt.want || got.Step != tt.step {
				t.Errorf("Check(%s) = %s/%s (%s), want %s/%s", tt.cmd, got.Behavior, got.Step, got.Reason, tt.want, tt.step)
			}
		})
	}
}

// These need the shell analysis to fill Reads, Writes of writing programs
// and WritesUnknown (the shell branch); they go through the real Analyze.
func TestBashReadsAndWritesThroughTheRealAnalysis(t *testing.T) {
	f := linkFixture(t)
	tests := []struct {
		name string
		mode trajectory.PermissionMode
		cmd  string
		want Behavior
		step trajectory.ChainStep
	}{
		{"cat of a file outside the workspace needs confirmation", trajectory.PermDefault, "cat ../outside/notes.txt", Ask, trajectory.StepPathValidation},
		{"ls of an absolute directory outside needs confirmation", trajectory.PermDefault, "ls " + f.outside, Ask, trajectory.StepPathValidation},
		{"grep through a symlink pointing inside whose dot-dot leads out needs confirmation", trajectory.PermDefault, "grep x l/../../../outside/notes.txt", Ask, trajectory.StepPathValidation},
		{"cat inside the workspace is allowed as read-only", trajectory.PermDefault, "cat main.go", Allow, trajectory.StepToolCheck},
		{"cp out of the workspace is denied in bypass mode", trajectory.PermBypass, "cp main.go ../outside/m.go", Deny, trajectory.StepPathValidation},
		{"mv out of the workspace is denied in bypass mode", trajectory.PermBypass, "mv main.go " + f.outside + "/", Deny, trajectory.StepPathValidation},
		{"rm through a symlink leading out is denied in bypass mode", trajectory.PermBypass, "rm escape/notes.txt", Deny, trajectory.StepPathValidation},
		{"tee outside the workspace is denied in bypass mode", trajectory.PermBypass, "echo x | tee ../outside/t", Deny, trajectory.StepPathValidation},
		{"sed -i outside the workspace is denied in bypass mode", trajectory.PermBypass, "sed -i s/a/b/ ../outside/notes.txt", Deny, trajectory.StepPathValidation},
		{"touch through a dangling link pointing outside is denied in bypass mode", trajectory.PermBypass, "touch dangling", Deny, trajectory.StepPathValidation},
		{"ln creating a link outside the workspace is denied in bypass mode", trajectory.PermBypass, "ln -s main.go ../outside/link", Deny, trajectory.StepPathValidation},
		{"chmod outside the workspace is denied in bypass mode", trajectory.PermBypass, "chmod 600 ../outside/notes.txt", Deny, trajectory.StepPathValidation},
		{"install outside the workspace is denied in bypass mode", trajectory.PermBypass, "install -m 755 main.go ../outside/bin", Deny, trajectory.StepPathValidation},
		{"cp into a protected path needs confirmation in bypass mode", trajectory.PermBypass, "cp main.go deploy/main.go", Ask, trajectory.StepProtectedPath},
		{"cp inside the workspace is allowed in bypass mode", trajectory.PermBypass, "cp main.go copy.go", Allow, trajectory.StepBypassMode},
		{"cp inside the workspace asks in accept_edits mode", trajectory.PermAcceptEdits, "cp main.go copy.go", Ask, trajectory.StepDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.checker(t, Config{Mode: tt.mode, ProtectedPaths: []string{"deploy/**"}})
			if got := c.Check(bash(tt.cmd)); got.Behavior != tt.want || got.Step != tt.step {
				t.Errorf("Check(%s) = %s/%s (%s), want %s/%s", tt.cmd, got.Behavior, got.Step, got.Reason, tt.want, tt.step)
			}
		})
	}
}
