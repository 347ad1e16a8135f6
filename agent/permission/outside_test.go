package permission

import (
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// TestProgramsOwnOutputsOutsideTheWorkspaceAreDeniedInEveryMode writes
// outside the workspace through options and forms the shell analysis
// reads since issue 32 (none from the corpus): each is a write outside
// the workspace, denied by path validation in every mode, bypass
// included, and never a question that bypass would answer with yes.
func TestProgramsOwnOutputsOutsideTheWorkspaceAreDeniedInEveryMode(t *testing.T) {
	f := newFixture(t)
	cmds := []string{
		"curl -o" + f.outside + "/x http://127.0.0.1:9/x",
		"curl -sSLo " + f.outside + "/x http://127.0.0.1:9/x",
		"curl --trace " + f.outside + "/t http://127.0.0.1:9/x",
		"wget -qO " + f.outside + "/x http://127.0.0.1:9/x",
		"wget -a " + f.outside + "/log http://127.0.0.1:9/x",
		"sed -n '1w " + f.outside + "/out' main.go",
		"sed 's/a/b/w " + f.outside + "/out' main.go",
		"find . -fprint0 " + f.outside + "/list",
		"find . -fls " + f.outside + "/list",
		"sort -uo " + f.outside + "/sorted main.go",
		"strace -o " + f.outside + "/trace ls",
		"tar -xPf evil.tar",
		"ln " + f.outside + "/notes.txt here",
		"cp -l " + f.outside + "/notes.txt here",
		"perl -pi -e 's/a/b/' " + f.outside + "/notes.txt",
		"awk '{print > \"" + f.outside + "/x\"}' main.go",
		"rsync -a main.go " + f.outside + "/y",
		"echo x > ~nobody/x",
		"cd " + f.outside + " && echo x > ~+/notes.txt",
		"HOME=" + f.outside + "; echo x > ~/notes.txt",
		"echo x > \"${HOME%/}/notes.txt\"",
		"ssh -o ProxyCommand='cp main.go " + f.outside + "/y' host",
		"unzip -o x.zip -d " + f.outside,
		"git clone https://127.0.0.1/x " + f.outside + "/clone",
		"git -C " + f.outside + " init",
		"xz -d " + f.outside + "/notes.txt.xz",
		"uniq main.go " + f.outside + "/u",
	}
	for _, m := range []trajectory.PermissionMode{trajectory.PermDefault, trajectory.PermAcceptEdits, trajectory.PermBypass} {
		c := f.checker(t, Config{Mode: m, Allow: []string{"Bash"}})
		for _, cmd := range cmds {
			if d := c.Check(bash(cmd)); d.Behavior != Deny {
				t.Errorf("%s in %s mode: %s by %s/%s, want a deny", cmd, m, d.Behavior, d.Source, d.Step)
			}
		}
	}
}
