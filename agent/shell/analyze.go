package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what Analyze learned about one bash command.
type Analysis struct {
	// Commands lists every simple command in execution order, including
	// those inside pipelines, && / || / ; lists, subshells, { } groups,
	// function bodies, if/for/while/case bodies, command and process
	// substitutions, and the literal script of sh -c / bash -c / eval.
	Commands []Command
	// Writes lists the file targets of output redirections (>, >>, &>, >|,
	// 2>, <>, >&file), excluding /dev/null, /dev/stdout, /dev/stderr and fd
	// duplications such as 2>&1. A target that is not a literal is kept as
	// its source text (for example "$OUT").
	Writes []string
	// Reads lists the path operands that the command's read-only programs
	// read (cat a, grep x dir, ls ../y), after quote removal, so the
	// permission layer can check them against the workspace boundary the
	// way it checks the read tool's path.
	Reads []string
	// WritesUnknown reports that the command may write to a file whose path
	// cannot be known before it runs (a target that is not a literal, or a
	// writing program whose operands cannot be read statically). Such a
	// command is never treated as an edit confined to the workspace.
	WritesUnknown bool
	// ReadOnly is true only when the whole command provably changes
	// nothing: see the package documentation.
	ReadOnly bool
	// Why gives, when ReadOnly is false, the first reason in plain words.
	Why string
	// Danger is set when the command matches a hard-blocked pattern.
	Danger *Danger
	// Err is the parse error, if the command could not be parsed.
	Err error
}

// Command is one simple command of a bash command line.
type Command struct {
	// Name is the command name with quotes and escapes removed, or "" when
	// the name is not a literal (for example "$CMD").
	Name string
	// Args are the words after the name. A literal word is given with quotes
	// and escapes removed; any other word is kept as its source text.
	Args []string
	// Dynamic reports that some word is not a literal: a variable, a
	// substitution, or an unquoted glob or brace expansion.
	Dynamic bool
	// Text is the simple command's source text, assignments included.
	Text string
}

// Words returns the name followed by the arguments, the form permission
// rules are matched against: assignments, quotes and escapes do not change
// it, so quoting a word cannot dodge a rule.
func (c Command) Words() []string {
	return append([]string{c.Name}, c.Args...)
}

// Danger is a hard-blocked dangerous pattern found in a command.
type Danger struct {
	// Name is a stable label such as "rm_root", for the trajectory.
	Name string
	// Reason says in plain words what the command would do.
	Reason string
}

// maxNesting bounds how deep sh -c and eval scripts are parsed, so that a
// hostile command cannot make the analysis recurse without end.
const maxNesting = 4

// Analyze parses command as bash and classifies it. It never panics: a
// parser panic is recovered and reported as a parse error, and any failure
// leaves ReadOnly false.
func Analyze(command string) (a Analysis) {
	defer func() {
		if r := recover(); r != nil {
			a = Analysis{
				Err: fmt.Errorf("shell parser failed on this command: %v", r),
				Why: "the command could not be analysed",
			}
		}
	}()
	an := analyzer{}
	an.script(command, 0)
	a = an.result()
	return a
}

// analyzer collects the facts of one command line while walking its trees.
type analyzer struct {
	commands []Command
	writes   []string
	why      string
	danger   *Danger
	err      error
	// fetches is set when some command is a downloader, the only case in
	// which the download-and-execute walk is worth its cost.
	fetches bool
}

// notReadOnly records the first reason the command is not read-only.
func (an *analyzer) notReadOnly(format string, args ...any) {
	if an.why == "" {
		an.why = fmt.Sprintf(format, args...)
	}
}

func (an *analyzer) dangerous(name, reason string) {
	if an.danger == nil {
		an.danger = &Danger{Name: name, Reason: reason}
	}
	an.notReadOnly("%s", reason)
}

func (an *analyzer) result() Analysis {
	a := Analysis{
		Commands: an.commands,
		Writes:   an.writes,
		Danger:   an.danger,
		Err:      an.err,
		Why:      an.why,
	}
	if a.Why == "" && len(a.Commands) == 0 {
		a.Why = "there is no command to run"
	}
	a.ReadOnly = a.Why == ""
	return a
}

func parse(src string) (*syntax.File, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	return p.Parse(strings.NewReader(src), "")
}

// script parses and walks one shell script: the command line itself, or
// the literal script given to sh -c or eval.
func (an *analyzer) script(src string, depth int) {
	f, err := parse(src)
	if err != nil {
		if an.err == nil {
			an.err = err
		}
		an.notReadOnly("parse error: %v", err)
		return
	}
	an.walk(f, src, depth)
	checkForkBomb(an, f)
	if an.fetches {
		checkPipelines(an, f, src)
	}
}

// walk visits the tree. Simple commands are recorded after their children,
// because command substitutions in a command's words run before it.
func (an *analyzer) walk(f *syntax.File, src string, depth int) {
	var stack []syntax.Node
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if call, ok := top.(*syntax.CallExpr); ok {
				an.call(call, src, depth)
			}
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if n.Backquotes {
				an.notReadOnly("command substitution `…`")
			} else {
				an.notReadOnly("command substitution $(…)")
			}
		case *syntax.ProcSubst:
			an.notReadOnly("process substitution %s(…)", n.Op)
		case *syntax.FuncDecl:
			an.notReadOnly("defines a shell function")
		case *syntax.CoprocClause:
			an.notReadOnly("coproc runs a background process")
		case *syntax.Redirect:
			an.redirect(n, src)
		case *syntax.Assign:
			an.assign(n)
		case *syntax.DeclClause:
			if n.Variant != nil && n.Variant.Value == "export" {
				for _, as := range n.Args {
					if as.Name == nil {
						an.notReadOnly("export of a name that is not a literal")
					}
				}
			}
		case *syntax.ParamExp:
			if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) {
				name := ""
				if n.Param != nil {
					name = n.Param.Value
				}
				if dangerousEnv(name) {
					an.notReadOnly("parameter expansion assigns %s", name)
				}
			}
		}
		return true
	})
}

// assign checks a variable assignment, alone, before a command, or in
// export/declare/local.
func (an *analyzer) assign(as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	if dangerousEnv(as.Name.Value) {
		an.notReadOnly("assignment to %s changes how programs run", as.Name.Value)
	}
}

// dangerousEnv reports environment variables that change which code runs
// or how the shell reads commands.
func dangerousEnv(name string) bool {
	switch name {
	case "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES",
		"DYLD_LIBRARY_PATH", "PATH", "BASH_ENV", "ENV", "IFS", "PROMPT_COMMAND",
		"SHELLOPTS", "BASHOPTS", "PS4", "CDPATH", "GLOBIGNORE", "PYTHONPATH",
		"PYTHONSTARTUP", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT",
		"GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
		"GIT_PAGER", "PAGER", "EDITOR", "VISUAL", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
		"GIT_CONFIG_PARAMETERS", "GIT_DIR", "HOME":
		return true
	}
	return strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "GIT_CONFIG_")
}

// harmlessTargets are redirection targets that write no file.
var harmlessTargets = map[string]bool{
	"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true,
}

func (an *analyzer) redirect(r *syntax.Redirect, src string) {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return
	case syntax.DplOut:
		// >&2 and >&- duplicate or close a descriptor; >&word with any
		// other word writes the file word.
		if w := word(r.Word, src); !w.dynamic && (w.value == "-" || isDigits(w.value)) {
			return
		}
	}
	w := word(r.Word, src)
	target := w.value
	if w.dynamic {
		target = w.source
	}
	if !w.dynamic && harmlessTargets[target] {
		return
	}
	an.writes = append(an.writes, target)
	an.notReadOnly("redirection writes to %s", target)
	if !w.dynamic && isBlockDevice(target) {
		an.dangerous("device_write", fmt.Sprintf("redirection writes directly to the disk device %s", target))
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// call records one simple command and classifies it.
func (an *analyzer) call(call *syntax.CallExpr, src string, depth int) {
	if len(call.Args) == 0 {
		return // only assignments; checked by assign
	}
	cmd := Command{Text: src[call.Pos().Offset():call.End().Offset()]}
	words := make([]wordInfo, len(call.Args))
	for i, a := range call.Args {
		words[i] = word(a, src)
		if words[i].dynamic || words[i].glob {
			cmd.Dynamic = true
		}
	}
	if !words[0].dynamic && !words[0].glob {
		cmd.Name = words[0].value
	}
	for _, w := range words[1:] {
		if w.dynamic {
			cmd.Args = append(cmd.Args, w.source)
		} else {
			cmd.Args = append(cmd.Args, w.value)
		}
	}
	an.commands = append(an.commands, cmd)

	if cmd.Name == "" {
		an.notReadOnly("the command name %s is not a literal", words[0].source)
		return
	}
	checkDanger(an, cmd)
	// Only a bare name is whitelisted: ./cat or bin/ls run files of the
	// workspace, not the system tools the whitelist is about.
	if why := readOnlyCall(cmd.Name, words[1:]); why != "" {
		an.notReadOnly("%s", why)
	}
	an.nested(cmd, words, depth)
}

// nested analyses the literal script of sh -c and eval, so that rules and
// dangerous patterns see the commands inside. Such calls are never
// read-only, whatever the script.
func (an *analyzer) nested(cmd Command, words []wordInfo, depth int) {
	var script *wordInfo
	switch path.Base(cmd.Name) {
	case "eval":
		if len(words) == 2 {
			script = &words[1]
		}
	case "sh", "bash", "dash", "zsh", "ksh":
		for i := 1; i+1 < len(words); i++ {
			if !words[i].dynamic && words[i].value == "-c" {
				script = &words[i+1]
				break
			}
		}
	}
	if script == nil || script.dynamic || depth >= maxNesting {
		return
	}
	an.script(script.value, depth+1)
}

// wordInfo is one shell word as the classifier sees it.
type wordInfo struct {
	value   string // quotes and escapes removed; meaningful when !dynamic
	source  string // the word as written
	dynamic bool   // expands at run time: variable, substitution, $'…'
	glob    bool   // unquoted glob or brace pattern
	// mayHideOption is an unquoted pattern that could expand to a word
	// that looks like an option ("-delete") without showing it.
	mayHideOption bool
}

func word(w *syntax.Word, src string) wordInfo {
	info := wordInfo{}
	if w == nil || len(w.Parts) == 0 {
		return info
	}
	info.source = src[w.Pos().Offset():w.End().Offset()]
	var b strings.Builder
	var unquoted strings.Builder // the unquoted text, where globs and braces act
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			unquoted.WriteString(p.Value)
			if i := strings.IndexAny(p.Value, "*?[{"); i >= 0 && b.Len() == 0 && strings.Trim(p.Value[:i], "-") == "" {
				// A pattern at the start (after dashes) can expand to a
				// file name that looks like an option, such as -delete.
				info.mayHideOption = true
			}
			b.WriteString(unescapeUnquoted(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				info.dynamic = true
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				info.dynamic = true
			}
			for _, dp := range p.Parts {
				lit, ok := dp.(*syntax.Lit)
				if !ok {
					info.dynamic = true
					continue
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			info.dynamic = true
		}
	}
	info.value = b.String()
	u := unquoted.String()
	if strings.Contains(u, "{") {
		// Brace expansion turns one word into several: -{delete,} is
		// "-delete -".
		info.glob, info.mayHideOption = true, true
	}
	if strings.ContainsAny(u, "*?") || (strings.Contains(u, "[") && strings.Contains(u, "]")) {
		info.glob = true
	} else if !strings.Contains(u, "{") {
		info.mayHideOption = false
	}
	return info
}

// unescapeUnquoted removes backslashes the way bash does outside quotes.
func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes backslashes the way bash does inside "…".
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
