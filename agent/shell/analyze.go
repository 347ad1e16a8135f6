package shell

import (
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what Analyze learned about one bash command.
type Analysis struct {
	// Commands lists every simple command in execution order, including
	// those inside pipelines, && / || / ; lists, subshells, { } groups,
	// function bodies, if/for/while/case bodies, command and process
	// substitutions, and the literal script of sh -c / bash -c / eval.
	Commands []Command
	// Writes lists, after static expansion (quotes removed, braces and
	// known variables expanded), every file path the command is known to
	// write, create, delete, rename or change the mode of: the targets of
	// output redirections (>, >>, &>, >|, 2>, <>, >&file; only exactly
	// /dev/null and descriptor duplications such as 2>&1 are left out) and
	// the path operands of writing programs (cp and mv destinations, mv
	// sources, rm, rmdir, unlink, shred, tee, sed -i, touch, ln link names,
	// chmod/chown/chgrp operands, install and mkdir targets, truncate,
	// dd of=, tar -x/-C and tar -c -f archives, curl -o and wget outputs). A path may start with "~"
	// (the home directory, for the caller to expand) and may hold glob
	// characters when the shell will expand them. A target that is only
	// known at run time is never listed here: WritesUnknown is set instead.
	Writes []string
	// Reads lists the path operands that the command's read-only programs
	// read (cat a, grep x dir, ls ../y, find starts, sed and awk files,
	// grep -f and similar option values, input redirections < file, cd
	// targets), after static expansion, so the permission layer can check
	// them against the workspace boundary and the file rules the way it
	// checks the read tool's path. State read without a path operand (ps
	// reading /proc, env, df) is not listed. After a static cd, a relative
	// operand is listed both joined to the cd target and as written. A path
	// may start with "~" and may hold glob characters. It is complete only
	// when ReadOnly is true; a read-only command never reads a path that is
	// only known at run time.
	Reads []string
	// WritesUnknown reports that Writes may be incomplete: the command may
	// write a file whose path cannot be known before it runs (a target
	// that is not static, a glob, xargs or find -exec feeding a writing
	// program, a dynamic program name, an option the analysis does not
	// understand), or it runs a program that is neither read-only nor a
	// writing program whose operands the analysis reads (make, python,
	// git commit…). Such a command is never treated as an edit confined to
	// the workspace. It is false for a read-only command.
	WritesUnknown bool
	// WritesFiles reports that some step of the command writes files by
	// what it is: Writes is not empty, or a redirection, a writing program
	// (rm, unlink, shred, cp, tee, sed -i, sed w, tar -x, patch, curl -o…)
	// or xargs or find -exec feeding one writes a file only known at run
	// time. A program the analysis does not know (make, python, a dynamic
	// name) makes WritesUnknown true but not WritesFiles: it may write,
	// but nothing in the command says it does. The low-yield-spin defense
	// reads "wrote nothing" from it, so that it and the permission chain
	// judge writes by one list.
	WritesFiles bool
	// ReadOnly is true only when the whole command provably changes
	// nothing: see the package documentation.
	ReadOnly bool
	// Why gives, when ReadOnly is false, the first reason in plain words.
	Why string
	// Danger is set when the command matches a hard-blocked dangerous
	// class; see the Danger* constants.
	Danger *Danger
	// Err is the parse error, if the command could not be parsed.
	Err error
}

// Command is one simple command of a bash command line.
type Command struct {
	// Name is the command name after static expansion (quotes and escapes
	// removed, $'…' decoded, known variables substituted), or "" when the
	// name is only known at run time (for example "$CMD").
	Name string
	// Args are the words after the name. A static word is given after
	// expansion (a brace expansion gives several words); any other word is
	// kept as its source text.
	Args []string
	// Dynamic reports that some word is not a plain literal: a variable, a
	// substitution, an unquoted glob or a brace expansion.
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
	// Name is one of the Danger* class names, for the trajectory.
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
			err := fmt.Errorf("shell parser failed on this command: %v", r)
			a = Analysis{
				Err:           err,
				Why:           "the command could not be analysed",
				WritesUnknown: true,
				WritesFiles:   true,
				Danger:        unparseable(err),
			}
		}
	}()
	an := analyzer{}
	an.script(command, 0)
	a = an.result()
	return a
}

func unparseable(err error) *Danger {
	return &Danger{Name: DangerUnparseable, Reason: fmt.Sprintf(
		"cannot be parsed (%v), and bash would still run the lines before the error; fix the quoting and send it again", err)}
}

// analyzer collects the facts of one command line while walking its trees.
type analyzer struct {
	commands      []Command
	writes        []string
	reads         []string
	writesUnknown bool
	writesFiles   bool
	why           string
	danger        *Danger
	err           error

	// vars holds variables assigned earlier in the command line.
	vars vars
	// arrays holds arrays assigned earlier with static elements.
	arrays map[string][]string
	// ifs is IFS when assigned a static value (nil: bash's default);
	// ifsUnknown is set once IFS is given a value known only at run time,
	// after which no variable is substituted.
	ifs        *string
	ifsUnknown bool
	// cwd is the static target of the last cd, "" when there was none;
	// cwdUnknown is set after a cd to a directory known only at run time.
	cwd        string
	cwdUnknown bool
	// downloads lists files a downloader wrote, for download-then-run.
	downloads []string
	// fetches is set when some command is a downloader, the only case in
	// which the pipeline walk for download-and-execute is worth its cost.
	fetches bool
	// fieldCache holds each call's expanded words as they were when the
	// call was analysed, so that later checks see the same expansion.
	fieldCache map[*syntax.CallExpr][]field
	// netPath is a /dev/tcp or /dev/udp redirection target seen anywhere.
	netPath string
	// stmtNameCache holds the names each side of a pipe runs.
	stmtNameCache map[*syntax.Stmt]map[string]bool
	// nameCache holds the names each call runs, for the pipeline checks.
	nameCache map[*syntax.CallExpr]map[string]bool
	// inLoop is set in the analysis of one pass of a for loop.
	inLoop bool
	// stmts counts the statements, so that [[ -f x ]] alone is a command.
	stmts int
	// gitEnvSet holds the GIT_* variables assigned earlier in the command
	// line (GIT_CONFIG_COUNT=1; export GIT_CONFIG_KEY_0=…).
	gitEnvSet map[string]field
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

// write records a static file the command writes. After a cd, a relative
// target is listed joined to the cd target and as written; after a cd to a
// directory only known at run time it is unknown as well.
func (an *analyzer) write(target string) {
	an.writes = append(an.writes, an.relPaths(target)...)
	an.writesFiles = true
	if an.cwdUnknown && !path.IsAbs(target) && !strings.HasPrefix(target, "~") {
		an.writesUnknown = true
	}
	an.notReadOnly("writes to %s", target)
}

func (an *analyzer) result() Analysis {
	a := Analysis{
		Commands:      an.commands,
		Writes:        an.writes,
		Reads:         an.reads,
		WritesUnknown: an.writesUnknown,
		WritesFiles:   an.writesFiles || len(an.writes) > 0 || an.err != nil,
		Danger:        an.danger,
		Err:           an.err,
		Why:           an.why,
	}
	if a.Why == "" && an.stmts == 0 {
		a.Why = "there is no command to run"
	}
	a.ReadOnly = a.Why == ""
	if a.ReadOnly {
		a.WritesUnknown = false
	}
	return a
}

// parsers reuses bash parsers: a new one costs more than a short parse.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parse(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p) // not reached after a parser panic: that parser is dropped
	return f, err
}

// script parses and walks one shell script: the command line itself, or
// the literal script given to sh -c or eval.
func (an *analyzer) script(src string, depth int) {
	f, err := parse(src)
	if err != nil {
		if an.err == nil {
			an.err = err
		}
		an.writesUnknown = true
		an.notReadOnly("parse error: %v", err)
		if an.danger == nil {
			an.danger = unparseable(err)
		}
		return
	}
	if strings.IndexFunc(src, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' }) >= 0 {
		// Bash and the parser disagree on some control characters (a form
		// feed separates words for the parser, not for bash).
		an.writesUnknown = true
		an.notReadOnly("the command contains control characters")
	}
	an.walk(f, src, depth)
	an.scriptChecks(f, src)
}

// walk visits the tree. Simple commands are recorded after their children,
// because command substitutions in a command's words run before it.
func (an *analyzer) walk(f *syntax.File, src string, depth int) {
	var stack []syntax.Node
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch top := top.(type) {
			case *syntax.CallExpr:
				an.call(top, src, depth)
			case *syntax.DeclClause:
				an.decl(top, src)
			case *syntax.Stmt:
				an.stmtChecks(top, src)
			case *syntax.BinaryCmd:
				an.binaryChecks(top, src)
			case *syntax.FuncDecl:
				an.checkForkBomb(top)
			}
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *syntax.Stmt:
			an.stmts++
			if n.Background || n.Coprocess {
				// A background job outlives the call: it runs on after the
				// tool returns, unseen by the checks that follow.
				an.notReadOnly("runs a job in the background (&), which keeps running after the command returns")
			}
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
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
			if !arithmIsConstant(n) {
				an.notReadOnly("arithmetic on variables can run code through array subscripts")
			}
		case *syntax.TestClause:
			an.testClause(n)
		case *syntax.ForClause:
			if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
				an.loopDanger(wi, n.Do, src, depth)
				an.setVar(wi.Name.Value, nil)
				if !safeAssignName(wi.Name.Value, false) {
					an.notReadOnly("the loop assigns %s", wi.Name.Value)
				}
			}
		case *syntax.ParamExp:
			an.paramExp(n)
		}
		return true
	})
}

// maxLoopItems bounds how many static items of a for loop are tried.
const maxLoopItems = 16

// loopDanger checks the body of for x in a b c once for each static item,
// so that for d in /; do rm -rf $d; done is seen as rm -rf /. Only the
// danger of each pass is kept: the loop variable itself stays unknown for
// the read-only and path analysis, which must hold for every item at once.
func (an *analyzer) loopDanger(wi *syntax.WordIter, body []*syntax.Stmt, src string, depth int) {
	if an.danger != nil || len(wi.Items) == 0 || an.inLoop {
		return // nested loops are not multiplied out
	}
	var items []string
	for _, w := range wi.Items {
		for _, f := range an.evalWord(w, src) {
			if f.dynamic || f.glob || len(items) >= maxLoopItems {
				return
			}
			items = append(items, f.value)
		}
	}
	for _, item := range items {
		sub := analyzer{vars: vars{}, cwd: an.cwd, inLoop: true}
		for k, v := range an.vars {
			sub.vars[k] = v
		}
		sub.setVar(wi.Name.Value, &item)
		sub.walk(&syntax.File{Stmts: body}, src, depth)
		if sub.danger != nil && sub.danger.Name != DangerUnparseable {
			an.dangerous(sub.danger.Name, sub.danger.Reason)
			return
		}
	}
}

// arithmIsConstant reports arithmetic that uses only number literals: a
// variable name inside arithmetic is evaluated recursively, and a value
// such as a[$(cmd)] runs cmd.
func arithmIsConstant(n syntax.Node) bool {
	constant := true
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.Lit:
			if !isNumber(m.Value) {
				constant = false
			}
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ProcSubst:
			constant = false
		}
		return constant
	})
	return constant
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != 'x' && r != 'X' && r != '#' && !(r >= 'a' && r <= 'f') && !(r >= 'A' && r <= 'F') {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// testClause checks [[ … ]]: arithmetic comparisons evaluate their
// operands as arithmetic, and -v evaluates an array subscript.
func (an *analyzer) testClause(t *syntax.TestClause) {
	syntax.Walk(t.X, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsGtr, syntax.TsLeq, syntax.TsGeq:
				if !wordIsNumber(n.X) || !wordIsNumber(n.Y) {
					an.notReadOnly("[[ … ]] arithmetic comparison evaluates its operands as code")
				}
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
				an.notReadOnly("[[ -v ]] evaluates an array subscript")
			}
		}
		return true
	})
}

func wordIsNumber(x syntax.TestExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	lit := w.Lit()
	return isNumber(strings.TrimPrefix(lit, "-"))
}

// paramExp checks one parameter expansion for forms that run code or
// assign: ${x@P} expands a prompt string (which can hold $(cmd)), an index
// or slice is arithmetic, ${x:=v} assigns.
func (an *analyzer) paramExp(p *syntax.ParamExp) {
	name := ""
	if p.Param != nil {
		name = p.Param.Value
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			an.setVar(name, nil)
			if !safeAssignName(name, false) {
				an.notReadOnly("parameter expansion assigns %s", name)
			}
		case syntax.OtherParamOps:
			an.notReadOnly("${%s@…} transforms the value and can run code (prompt expansion)", name)
		}
	}
	if p.Excl {
		an.notReadOnly("indirect expansion ${!%s} can evaluate an array subscript", name)
	}
	if p.Index != nil && !arithmIsConstant(p.Index) {
		if w, ok := p.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*") {
			an.notReadOnly("an array subscript in ${%s[…]} is arithmetic that can run code", name)
		}
	}
	if p.Slice != nil && ((p.Slice.Offset != nil && !arithmIsConstant(p.Slice.Offset)) || (p.Slice.Length != nil && !arithmIsConstant(p.Slice.Length))) {
		an.notReadOnly("a substring offset in ${%s:…} is arithmetic that can run code", name)
	}
}

// safePrefixes are environment variables that may prefix a read-only
// command (LANG=C grep …): they change messages, time zones and colours,
// never which code runs or where files go.
var safeEnvNames = map[string]bool{
	"LANG": true, "LANGUAGE": true, "TZ": true, "NO_COLOR": true, "CLICOLOR": true,
	"CLICOLOR_FORCE": true, "FORCE_COLOR": true, "COLUMNS": true, "LINES": true, "TERM": true,
	"GREP_COLOR": true, "GREP_COLORS": true, "LS_COLORS": true, "TIME_STYLE": true, "QUOTING_STYLE": true,
	"POSIXLY_CORRECT": true,
}

// safeAssignName reports a variable that a read-only command may assign.
// As a prefix or with export (exported is true) only the safe list and
// LC_* qualify: any other variable may change how a program runs (GIT_*,
// LESSOPEN, PAGER, BASH_ENV, PS4…), and the list fails closed. A plain
// shell assignment (x=1) may also set a name with a lowercase letter, the
// convention for shell-local variables, except the *_proxy names that
// redirect network programs.
func safeAssignName(name string, exported bool) bool {
	if safeEnvNames[name] || strings.HasPrefix(name, "LC_") {
		return true
	}
	if exported {
		return false
	}
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, "_proxy") || lower == "home" || lower == "path" {
		return false
	}
	return name != strings.ToUpper(name)
}

// assign records a standalone assignment (x=1, or in export/declare/local)
// and checks it.
func (an *analyzer) assign(as *syntax.Assign, exported bool, src string) {
	if as.Name == nil {
		return
	}
	name := as.Name.Value
	if as.Index != nil && !arithmIsConstant(as.Index) {
		an.notReadOnly("the array subscript in %s[…]= is arithmetic that can run code", name)
	}
	if as.Array != nil && !as.Append && as.Index == nil {
		an.setArray(name, as.Array, src)
	} else if as.Array != nil || as.Append || as.Index != nil || as.Naked {
		if !as.Naked {
			an.setVar(name, nil)
		}
	} else if v, ok := an.staticString(as.Value); ok {
		an.setVar(name, &v)
	} else {
		an.setVar(name, nil)
	}
	if !safeAssignName(name, exported) {
		if as.Naked {
			an.notReadOnly("export of %s changes the environment of later programs", name)
		} else {
			an.notReadOnly("assignment to %s can change how programs run", name)
		}
	}
}

// decl checks export, declare, local, readonly and typeset.
func (an *analyzer) decl(d *syntax.DeclClause, src string) {
	variant := ""
	if d.Variant != nil {
		variant = d.Variant.Value
	}
	exported := variant == "export"
	for _, as := range d.Args {
		if as.Name == nil {
			// declare -x, -i, -n…: options; a flag other than -r/-a/-A
			// changes how the value is evaluated later.
			if as.Value != nil {
				f := as.Value.Lit()
				switch {
				case f == "-x" || strings.Contains(f, "x"):
					exported = true
				case f == "-r", f == "-a", f == "-A", f == "-g", f == "-p":
				default:
					an.notReadOnly("%s %s changes how a variable is evaluated", variant, f)
				}
				continue
			}
			an.notReadOnly("%s of a name that is not a literal", variant)
			continue
		}
		an.assign(as, exported, src)
	}
	an.checkGitEnv(an.assignedEnv(d.Args, src, true))
	if variant != "export" && variant != "local" && variant != "declare" && variant != "typeset" && variant != "readonly" {
		an.notReadOnly("%s is not known to be read-only", variant)
	}
}

// isHarmlessTarget reports the one output target that writes nothing.
func isHarmlessTarget(t string) bool { return t == "/dev/null" }

// isNetworkPath reports bash's special redirection paths, which open a
// network connection instead of a file.
func isNetworkPath(t string) bool {
	return strings.HasPrefix(t, "/dev/tcp/") || strings.HasPrefix(t, "/dev/udp/")
}

func (an *analyzer) redirect(r *syntax.Redirect, src string) {
	if r.Word == nil {
		return
	}
	fs := an.evalWord(r.Word, src)
	f := fs[0]
	if len(fs) != 1 {
		f = field{source: f.source, dynamic: true}
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	case syntax.DplIn, syntax.DplOut:
		// >&2 and >&- duplicate or close a descriptor; >&word with any
		// other word writes the file word.
		if !f.dynamic && (f.value == "-" || isDigits(strings.TrimSuffix(f.value, "-"))) {
			return
		}
		if r.Op == syntax.DplIn {
			an.notReadOnly("the input duplication <&%s is not a descriptor", f.source)
			return
		}
	case syntax.RdrIn:
		switch {
		case f.dynamic:
			an.notReadOnly("the input file %s is only known at run time", f.source)
		case isNetworkPath(f.value):
			an.netPath = f.value
			an.notReadOnly("the redirection from %s opens a network connection", f.value)
		default:
			an.reads = append(an.reads, an.relPaths(f.value)...)
		}
		return
	}
	if f.dynamic {
		an.writesUnknown = true
		an.writesFiles = true
		an.notReadOnly("redirection writes to %s, a file only known at run time", f.source)
		an.checkDynamicTarget(f, "the redirection")
		return
	}
	target := f.value
	if isHarmlessTarget(target) {
		return
	}
	if isNetworkPath(target) {
		an.netPath = target
		an.notReadOnly("the redirection to %s opens a network connection", target)
		return
	}
	if f.glob {
		an.writesUnknown = true
	}
	an.write(target)
	for _, p := range an.relPaths(target) {
		an.checkWriteTarget(p, "the redirection")
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

// relPaths returns how the permission layer should see a path operand read
// after a cd: joined to the cd target and as written, or only as written.
func (an *analyzer) relPaths(p string) []string {
	if an.cwd == "" || path.IsAbs(p) || strings.HasPrefix(p, "~") {
		return []string{p}
	}
	return []string{path.Join(an.cwd, p), p}
}

// call records one simple command and classifies it.
func (an *analyzer) call(call *syntax.CallExpr, src string, depth int) {
	if len(call.Args) == 0 {
		for _, as := range call.Assigns {
			an.assign(as, false, src)
		}
		an.checkGitEnv(an.assignedEnv(call.Assigns, src, true))
		return
	}
	cmd := Command{Text: src[call.Pos().Offset():call.End().Offset()]}
	var fs []field
	for _, w := range call.Args {
		fs = append(fs, an.evalWord(w, src)...)
	}
	if an.fieldCache == nil {
		an.fieldCache = map[*syntax.CallExpr][]field{}
	}
	an.fieldCache[call] = fs
	for _, f := range fs {
		if f.dynamic || f.glob || f.expanded {
			cmd.Dynamic = true
		}
	}
	if !fs[0].dynamic && !fs[0].glob {
		cmd.Name = fs[0].value
	}
	for _, f := range fs[1:] {
		if f.dynamic {
			cmd.Args = append(cmd.Args, f.source)
		} else {
			cmd.Args = append(cmd.Args, f.value)
		}
	}
	an.commands = append(an.commands, cmd)

	for _, as := range call.Assigns {
		an.prefixAssign(as)
	}
	env := an.assignedEnv(call.Assigns, src, false)
	var layers [][]field
	if _, wrapped := wrappers[path.Base(fs[0].value)]; wrapped && !fs[0].dynamic {
		layers = unwrapFields(fs) // env, sudo and doas may be wrapped in turn
	}
	for _, av := range layers {
		if len(av) == 0 || av[0].dynamic {
			continue
		}
		switch name := path.Base(av[0].value); name {
		case "env", "sudo", "doas":
			// Only the words before the command it runs are its
			// assignments; NAME=value after it is that command's argument.
			words := make([]string, len(av)-1)
			for k, f := range av[1:] {
				words[k] = f.value
			}
			end := innerStart(name, words)
			if end < 0 {
				end = len(words)
			}
			for _, a := range av[1 : 1+end] {
				key, val, ok := strings.Cut(a.value, "=")
				if a.dynamic || !isEnvAssignment(a.value) || !ok {
					continue
				}
				if env == nil {
					env = map[string]field{}
				}
				env[key] = field{value: val, source: a.source}
			}
		}
	}
	an.checkGitEnv(env)
	an.classify(fs, depth)
}

// prefixAssign checks an assignment before a command (FOO=1 cmd): it only
// goes into that command's environment.
func (an *analyzer) prefixAssign(as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	name := as.Name.Value
	if as.Index != nil && !arithmIsConstant(as.Index) {
		an.notReadOnly("the array subscript in %s[…]= is arithmetic that can run code", name)
	}
	if !safeAssignName(name, true) {
		an.notReadOnly("the environment variable %s can change how the program runs or where it writes", name)
	}
}

// classify runs the danger, read-only and write checks on one simple
// command given as its expanded fields.
func (an *analyzer) classify(fs []field, depth int) {
	an.checkDanger(fs, depth)
	if fs[0].dynamic || fs[0].glob {
		an.writesUnknown = true
		an.notReadOnly("the command name %s is only known at run time", fs[0].source)
		return
	}
	name := fs[0].value
	if downloaders[path.Base(name)] {
		an.fetches = true
	}
	if why, reads := readOnlyCall(fs); why != "" {
		an.notReadOnly("%s", why)
	} else {
		for _, r := range reads {
			an.reads = append(an.reads, an.relPaths(r)...)
		}
	}
	an.writeTargets(fs)
	an.trackCd(fs)
	an.trackDownloads(fs)
	an.nested(fs, depth)
}

// trackCd follows cd so that later relative operands can be joined to it.
func (an *analyzer) trackCd(fs []field) {
	avs := unwrapFields(fs) // builtin cd and command cd change directory too
	fs = avs[len(avs)-1]
	if len(fs) == 0 || fs[0].dynamic || (fs[0].value != "cd" && fs[0].value != "pushd") {
		return
	}
	ops := fs[1:]
	for len(ops) > 0 && !ops[0].dynamic && strings.HasPrefix(ops[0].value, "-") && ops[0].value != "-" {
		if ops[0].value == "--" {
			ops = ops[1:]
			break
		}
		ops = ops[1:]
	}
	switch {
	case len(ops) == 0:
		an.cwd = "~"
	case len(ops) == 1 && !ops[0].dynamic && !ops[0].glob && ops[0].value != "-":
		if path.IsAbs(ops[0].value) || strings.HasPrefix(ops[0].value, "~") || an.cwd == "" {
			an.cwd = path.Clean(ops[0].value)
		} else {
			an.cwd = path.Join(an.cwd, ops[0].value)
		}
		an.reads = append(an.reads, an.cwd)
		return
	default:
		an.cwdUnknown = true
		an.notReadOnly("cd to a directory only known at run time")
		return
	}
	an.reads = append(an.reads, an.cwd)
}

// nested analyses the literal script of sh -c and eval, so that rules and
// dangerous patterns see the commands inside. Such calls are never
// read-only, whatever the script.
func (an *analyzer) nested(fs []field, depth int) {
	for _, script := range nestedScripts(fs) {
		if script.dynamic {
			continue
		}
		if depth >= maxNesting {
			an.notReadOnly("shell scripts are nested too deeply to analyse")
			continue
		}
		an.script(script.value, depth+1)
	}
}

// nestedScripts returns the script words of eval, sh -c … and the commands
// they wrap.
func nestedScripts(fs []field) []field {
	var out []field
	for _, av := range unwrapFields(fs) {
		if len(av) == 0 || av[0].dynamic {
			continue
		}
		switch path.Base(av[0].value) {
		case "eval":
			if len(av) > 1 {
				// eval joins its arguments with spaces.
				var parts []string
				dyn := false
				for _, a := range av[1:] {
					parts = append(parts, a.value)
					dyn = dyn || a.dynamic
				}
				out = append(out, field{value: strings.Join(parts, " "), dynamic: dyn})
			}
		case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "su", "script", "runuser", "sg":
			for i := 1; i+1 < len(av); i++ {
				if !av[i].dynamic && strings.HasPrefix(av[i].value, "-") && !strings.HasPrefix(av[i].value, "--") && strings.Contains(av[i].value, "c") {
					out = append(out, av[i+1])
					break
				}
				if av[i].value == "--command" {
					out = append(out, av[i+1])
					break
				}
			}
		case "trap":
			// trap 'script' SIGNAL…: the script runs when the signal comes.
			for _, a := range av[1:] {
				if a.dynamic || !strings.HasPrefix(a.value, "-") {
					out = append(out, a)
					break
				}
			}
		case "alias":
			// alias x='script': with expand_aliases, x runs the script.
			for _, a := range av[1:] {
				if _, v, ok := strings.Cut(a.value, "="); ok && !a.dynamic {
					out = append(out, field{value: v})
				}
			}
		case "watch":
			// watch runs its arguments through sh -c.
			var parts []string
			dyn := false
			i := 1
			for i < len(av) && strings.HasPrefix(av[i].value, "-") {
				if v := av[i].value; v == "-n" || v == "-d" || v == "--interval" || v == "-q" {
					i++
				}
				i++
			}
			for _, a := range av[min(i, len(av)):] {
				parts = append(parts, a.value)
				dyn = dyn || a.dynamic
			}
			if len(parts) > 0 {
				out = append(out, field{value: strings.Join(parts, " "), dynamic: dyn})
			}
		case "tar", "rsync", "zip", "ssh", "scp", "sftp", "slogin":
			out = append(out, execOptions(path.Base(av[0].value), av[1:])...)
		case "git":
			out = append(out, gitExecOptions(av[1:])...)
		case "awk", "gawk", "mawk", "nawk":
			if program, _, _, _ := awkProgram(av[1:]); !program.dynamic {
				out = append(out, awkCommands(program.value)...)
			}
		case "env":
			for i := 1; i < len(av); i++ {
				v := av[i].value
				if v == "-S" || v == "--split-string" {
					if i+1 < len(av) {
						out = append(out, av[i+1])
					}
					break
				}
				if s, ok := strings.CutPrefix(v, "-S"); ok && s != "" {
					out = append(out, field{value: s})
					break
				}
				if s, ok := strings.CutPrefix(v, "--split-string="); ok {
					out = append(out, field{value: s})
					break
				}
			}
		}
	}
	return out
}

// execValued are, per program, its options whose value is a command line
// that it runs through a shell: tar --to-command, rsync -e, zip -TT,
// scp -S. ssh's -o ProxyCommand and LocalCommand are read apart.
var execValued = map[string][]string{
	"tar": {"--to-command", "--use-compress-program", "-I", "--info-script", "--new-volume-script", "-F",
		"--rsh-command", "--checkpoint-action"},
	"rsync": {"-e", "--rsh", "--rsync-path"},
	"zip":   {"-TT", "--unzip-command"},
	"scp":   {"-S"},
	"sftp":  {"-S", "-D"},
}

// execOptions returns the command lines a program's own options make it
// run, so that they are analysed like sh -c scripts: what they do is the
// command's danger, and the command is never read-only.
func execOptions(name string, args []field) []field {
	var out []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		if a.dynamic {
			continue
		}
		for _, opt := range execValued[name] {
			switch {
			case v == opt && i+1 < len(args):
				out = append(out, args[i+1])
			case strings.HasPrefix(opt, "--") && strings.HasPrefix(v, opt+"="):
				out = append(out, field{value: strings.TrimPrefix(v, opt+"="), source: a.source})
			case !strings.HasPrefix(opt, "--") && len(opt) == 2 && strings.HasPrefix(v, opt) && len(v) > 2 && name != "zip":
				out = append(out, field{value: v[2:], source: a.source})
			}
		}
		if name == "tar" && strings.HasPrefix(v, "--checkpoint-action=exec=") {
			out = append(out, field{value: strings.TrimPrefix(v, "--checkpoint-action=exec="), source: a.source})
		}
		if name == "ssh" || name == "scp" || name == "sftp" || name == "slogin" || name == "rsync" {
			// -o Key=value, -oKey=value, -o "Key value".
			opt := ""
			switch {
			case v == "-o" && i+1 < len(args):
				if args[i+1].dynamic {
					continue
				}
				opt = args[i+1].value
			case strings.HasPrefix(v, "-o") && len(v) > 2:
				opt = v[2:]
			default:
				continue
			}
			key, val, ok := strings.Cut(opt, "=")
			if !ok {
				key, val, _ = strings.Cut(opt, " ")
			}
			switch strings.ToLower(strings.TrimSpace(key)) {
			case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
				out = append(out, field{value: strings.TrimSpace(val), source: a.source})
			}
		}
	}
	return out
}

// assignedEnv returns the GIT_* variables an assignment list sets, with
// their values; a value only known at run time is a dynamic field. keep
// adds them to the variables the whole command line has set
// (GIT_CONFIG_COUNT=1; export GIT_CONFIG_COUNT), which every later check
// sees too.
func (an *analyzer) assignedEnv(list []*syntax.Assign, src string, keep bool) map[string]field {
	var out map[string]field
	if len(an.gitEnvSet) > 0 {
		out = maps.Clone(an.gitEnvSet)
	}
	for _, as := range list {
		if as.Name == nil || !strings.HasPrefix(as.Name.Value, "GIT_") {
			continue
		}
		if out == nil {
			out = map[string]field{}
		}
		f := field{dynamic: true, source: as.Name.Value}
		if v, ok := an.staticString(as.Value); ok && as.Array == nil && as.Index == nil {
			f = field{value: v, source: v}
		}
		out[as.Name.Value] = f
		if keep {
			if an.gitEnvSet == nil {
				an.gitEnvSet = map[string]field{}
			}
			an.gitEnvSet[as.Name.Value] = f
		}
	}
	return out
}

// gitProgramEnv are git's environment variables that name a program git
// runs, with the configuration key each stands for.
var gitProgramEnv = map[string]string{
	"GIT_SSH_COMMAND": "git -c core.sshCommand", "GIT_SSH": "git -c core.sshCommand", "GIT_PROXY_COMMAND": "git -c core.gitProxy",
	"GIT_EXTERNAL_DIFF": "git -c diff.external", "GIT_ASKPASS": "git -c core.askPass", "GIT_EXEC_PATH": "git --exec-path",
	"GIT_TEMPLATE_DIR": "git -c init.templateDir",
}

// maxGitConfigCount bounds the GIT_CONFIG_COUNT the check reads entry by
// entry; a larger count is dangerous as such.
const maxGitConfigCount = 64

// checkGitEnv finds configuration given to git through its environment
// that makes git run a program: GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n, GIT_CONFIG_PARAMETERS (what git -c passes on), a
// configuration file of the model's choosing (GIT_CONFIG_GLOBAL), and the
// variables that name a program outright (GIT_SSH_COMMAND). It is
// git_config_exec, as git -c core.fsmonitor=… is: git status then runs
// the program. A count whose keys the same command does not give
// statically is dangerous too, because the keys may come from elsewhere.
func (an *analyzer) checkGitEnv(env map[string]field) {
	if len(env) == 0 || an.danger != nil {
		return
	}
	danger := func(format string, args ...any) {
		an.dangerous(DangerGitConfigExec, fmt.Sprintf(format, args...))
	}
	for name, f := range env {
		switch {
		case name == "GIT_CONFIG_PARAMETERS":
			danger("sets GIT_CONFIG_PARAMETERS, git configuration that can make git run a program")
			return
		case name == "GIT_CONFIG_GLOBAL" || name == "GIT_CONFIG_SYSTEM" || name == "GIT_CONFIG":
			if f.dynamic || f.value != "/dev/null" {
				danger("points git at the configuration file %s (%s), which can make git run a program", f.source, name)
				return
			}
		case strings.HasPrefix(name, "GIT_CONFIG_KEY_"):
			if f.dynamic || codeRunningConfig(f.value, "x") {
				danger("makes git run a program through its configuration (%s=%s)", name, f.source)
				return
			}
		case gitProgramEnv[name] != "":
			if f.dynamic || !benignPrograms[strings.TrimSpace(f.value)] {
				danger("makes git run a program (%s, like %s)", name, gitProgramEnv[name])
				return
			}
		}
	}
	if c, ok := env["GIT_CONFIG_COUNT"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(c.value))
		if c.dynamic || err != nil || n < 0 || n > maxGitConfigCount {
			danger("sets GIT_CONFIG_COUNT to %s, git configuration the analysis cannot read", c.source)
			return
		}
		for i := range n {
			if _, ok := env[fmt.Sprintf("GIT_CONFIG_KEY_%d", i)]; !ok {
				danger("sets GIT_CONFIG_COUNT=%d without GIT_CONFIG_KEY_%d, git configuration the analysis cannot read", n, i)
				return
			}
		}
	}
}

// gitExecOptions returns the command lines git subcommands run through a
// shell: git rebase -x/--exec, git submodule foreach, git bisect run and
// git filter-branch's filters.
func gitExecOptions(args []field) []field {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].value, "-") {
		switch args[i].value {
		case "-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env":
			i++
		}
		i++
	}
	if i >= len(args) {
		return nil
	}
	sub, rest := args[i].value, args[i+1:]
	var out []field
	join := func(fs []field) {
		var parts []string
		dyn := false
		for _, f := range fs {
			parts = append(parts, f.value)
			dyn = dyn || f.dynamic
		}
		if len(parts) > 0 {
			out = append(out, field{value: strings.Join(parts, " "), dynamic: dyn})
		}
	}
	switch sub {
	case "rebase":
		for j := 0; j < len(rest); j++ {
			v := rest[j].value
			switch {
			case (v == "-x" || v == "--exec") && j+1 < len(rest):
				out = append(out, rest[j+1])
				j++
			case strings.HasPrefix(v, "--exec="):
				out = append(out, field{value: strings.TrimPrefix(v, "--exec="), dynamic: rest[j].dynamic})
			case strings.HasPrefix(v, "-x") && len(v) > 2:
				out = append(out, field{value: v[2:], dynamic: rest[j].dynamic})
			}
		}
	case "submodule":
		for j, f := range rest {
			if f.value == "foreach" {
				k := j + 1
				for k < len(rest) && strings.HasPrefix(rest[k].value, "-") {
					k++
				}
				join(rest[k:])
				break
			}
		}
	case "bisect":
		// git bisect run runs its arguments as a command, not a script:
		// each word is quoted so the script says the same.
		if len(rest) > 1 && rest[0].value == "run" {
			var words []string
			dyn := false
			for _, f := range rest[1:] {
				q, err := syntax.Quote(f.value, syntax.LangBash)
				if err != nil {
					dyn = true
				}
				words = append(words, q)
				dyn = dyn || f.dynamic
			}
			out = append(out, field{value: strings.Join(words, " "), dynamic: dyn})
		}
	case "grep", "difftool":
		// git grep -O runs its value on the matching files; git difftool
		// -x runs its value on each pair.
		for j := 0; j < len(rest); j++ {
			v := rest[j].value
			short, long := "-O", "--open-files-in-pager"
			if sub == "difftool" {
				short, long = "-x", "--extcmd"
			}
			switch {
			case (v == short || v == long) && j+1 < len(rest) && (sub == "difftool" || v == long):
				out = append(out, rest[j+1])
				j++
			case strings.HasPrefix(v, long+"="):
				out = append(out, field{value: strings.TrimPrefix(v, long+"="), dynamic: rest[j].dynamic})
			case strings.HasPrefix(v, short) && len(v) > 2:
				out = append(out, field{value: v[2:], dynamic: rest[j].dynamic})
			case sub == "grep" && v == short:
				// git grep -O alone uses the pager; a value must be attached.
				out = append(out, field{value: "less"})
			}
		}
	case "filter-branch":
		for j := 0; j+1 < len(rest); j++ {
			if strings.HasSuffix(rest[j].value, "-filter") || rest[j].value == "--commit-filter" {
				out = append(out, rest[j+1])
				j++
			}
		}
	}
	return out
}
