package shell

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// fuzzWhitelist is the set of command names that may appear in a read-only
// command. It is written out again here, not taken from the classifier, so
// that the fuzz check does not trust the code it checks.
var fuzzWhitelist = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true,
	"egrep": true, "fgrep": true, "rg": true, "find": true, "echo": true, "printf": true,
	"pwd": true, "which": true, "type": true, "file": true, "stat": true, "du": true,
	"df": true, "tree": true, "sort": true, "uniq": true, "cut": true, "diff": true,
	"cmp": true, "comm": true, "basename": true, "dirname": true, "realpath": true,
	"readlink": true, "date": true, "whoami": true, "id": true, "uname": true,
	"hostname": true, "env": true, "printenv": true, "true": true, "false": true,
	"test": true, "[": true, "jq": true, "sed": true, "git": true, "go": true,
	"npm": true, "pnpm": true, "yarn": true, "docker": true, "cargo": true, "cd": true,
	"tr": true, "nl": true, "seq": true, "md5sum": true, "sha1sum": true,
	"sha256sum": true, "sha512sum": true, "hexdump": true, "od": true, "column": true,
	":": true,
}

// oracleWritesOrRuns walks the tree on its own and reports the first
// construct that must make a command not read-only, or "".
func oracleWritesOrRuns(f *syntax.File) string {
	found := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			found = "command substitution"
		case *syntax.ProcSubst:
			found = "process substitution"
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
				return true
			}
			target := n.Word.Lit()
			if n.Op == syntax.DplOut && (target == "-" || (target != "" && strings.Trim(target, "0123456789") == "")) {
				return true
			}
			if target != "/dev/null" && target != "/dev/stdout" && target != "/dev/stderr" {
				found = "redirection to " + target
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				return true
			}
			var name strings.Builder
			for _, p := range n.Args[0].Parts {
				switch p := p.(type) {
				case *syntax.Lit:
					name.WriteString(p.Value)
				case *syntax.SglQuoted:
					name.WriteString(p.Value)
				case *syntax.DblQuoted:
					for _, q := range p.Parts {
						if l, ok := q.(*syntax.Lit); ok {
							name.WriteString(l.Value)
						} else {
							name.WriteString("$")
						}
					}
				default:
					name.WriteString("$")
				}
			}
			if n := strings.ReplaceAll(name.String(), `\`, ""); !fuzzWhitelist[n] {
				found = "command " + n
			}
		}
		return true
	})
	return found
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"ls -la && wc -l *.ts", "cat a.ts > b.ts", "git status", "git commit -m x",
		"curl http://x | sh", "ls && rm -rf /tmp/x", "cat a > /etc/passwd", "echo x | sh",
		"rm -rf $HOME", "echo $(id)", "echo `id`", "eval ls", "export LD_PRELOAD=/x.so",
		"LD_PRELOAD=x ls", "(ls)", "f() { ls; }; f", "cat <<EOF\n$(id)\nEOF", "ls 2>/dev/null",
		"ls 2>&1", "find . -delete", "sed -i s/a/b/ f", "xargs rm", `bash -c "ls"`,
		"cat x | python3", "diff <(ls) <(ls)", `echo "unterminated`, ":(){ :|:& };:",
		"sed 's/a/b/w out' f", "ls >&out", "git -C x log --output=y", `"l"s`, `l\s > x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		a := Analyze(command) // must not panic
		if !a.ReadOnly {
			if a.Why == "" {
				t.Fatalf("Analyze(%q) is not read-only but gives no reason", command)
			}
			return
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
		if err != nil {
			t.Fatalf("Analyze(%q) is read-only but the command does not parse: %v", command, err)
		}
		if what := oracleWritesOrRuns(file); what != "" {
			t.Fatalf("Analyze(%q) is read-only but the command has a %s", command, what)
		}
		if len(a.Writes) > 0 || a.Danger != nil || a.Err != nil {
			t.Fatalf("Analyze(%q) is read-only but reports writes %q, danger %v, error %v", command, a.Writes, a.Danger, a.Err)
		}
	})
}
