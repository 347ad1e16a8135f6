package shell

import (
	"fmt"
	"slices"
	"strings"
)

// operandKind says which operands of a read-only program are paths it
// reads.
type operandKind int

const (
	// noPaths: the operands are not files (echo, printf, seq).
	noPaths operandKind = iota
	// allPaths: every operand is a file or directory read (cat, ls, wc).
	allPaths
	// patternThenPaths: the first operand is a pattern or script unless
	// one is given by an option; the rest are files (grep, sed, jq).
	patternThenPaths
)

// roSpec describes a program that is read-only unless some options are
// given.
type roSpec struct {
	// valued are the short options that take a value; fileOpts those whose
	// value is a file that is read.
	valued, fileOpts string
	// long are the long options that take a separate value (they are also
	// accepted as --opt=value); longFile those whose value is a file read.
	long, longFile []string
	kind           operandKind
	// patternOpts are the options that give the pattern, so that every
	// operand is then a path (grep -e, sed -e, jq -f).
	patternOpts []string
	// badShort and bad are the options that make the program write or run
	// code (exactly, or as --opt=value for long ones).
	badShort string
	bad      []string
	// widenShort and widen are the options that make it read more than
	// its operands name, by following symbolic links out of them.
	widenShort string
	widen      []string
	// check is an extra check of the static arguments; it returns why the
	// call is not read-only, or "".
	check func(args []string) string
	// noPathsCheck programs accept operands known only at run time (echo).
	dynamicOK bool
}

// specs are the read-only programs and what makes each of them not
// read-only. A program not listed here is not read-only.
var specs = map[string]*roSpec{
	"echo": {kind: noPaths, dynamicOK: true}, "pwd": {}, "whoami": {}, "id": {}, "uname": {},
	"true": {dynamicOK: true}, "false": {dynamicOK: true}, ":": {dynamicOK: true}, "seq": {dynamicOK: true},
	"nproc": {}, "free": {}, "groups": {}, "uptime": {}, "arch": {}, "tty": {}, "logname": {}, "users": {},
	"printenv": {}, "sleep": {dynamicOK: true}, "basename": {dynamicOK: true}, "dirname": {dynamicOK: true},
	"ps": {dynamicOK: true}, "which": {}, "type": {}, "tr": {dynamicOK: true}, "cd": {},
	"hostname": {check: hostnameReadOnly},
	"date":     {valued: "dfr", long: []string{"--date", "--reference", "--file"}, fileOpts: "fr", longFile: []string{"--file", "--reference"}, check: dateReadOnly},
	"printf":   {dynamicOK: true, check: printfReadOnly},
	"test":     {dynamicOK: true, check: testReadOnly},
	"[":        {dynamicOK: true, check: testReadOnly},
	"read":     {valued: "adinNptu", check: readReadOnly},

	"cat": {kind: allPaths}, "tac": {kind: allPaths, valued: "s", long: []string{"--separator"}},
	"head": {kind: allPaths, valued: "nc", long: []string{"--lines", "--bytes"}},
	"tail": {kind: allPaths, valued: "ncs", long: []string{"--lines", "--bytes", "--pid", "--sleep-interval", "--max-unchanged-stats"}},
	"wc":   {kind: allPaths, longFile: []string{"--files0-from"}},
	"ls": {kind: allPaths, valued: "ITw", long: []string{"--ignore", "--hide", "--width", "--tabsize", "--block-size",
		"--format", "--time-style", "--sort", "--time", "--indicator-style", "--quoting-style"}},
	"stat": {kind: allPaths, valued: "c", long: []string{"--format", "--printf"}},
	"du": {kind: allPaths, valued: "dBtX", fileOpts: "X", long: []string{"--max-depth", "--block-size", "--threshold",
		"--exclude", "--time-style", "--exclude-from", "--files0-from"}, longFile: []string{"--exclude-from", "--files0-from"}, widenShort: "L", widen: []string{"--dereference"}},
	"df":       {kind: allPaths, valued: "Btx", long: []string{"--block-size", "--type", "--exclude-type"}},
	"file":     {kind: allPaths, valued: "mfFeP", fileOpts: "mf", long: []string{"--magic-file", "--files-from", "--separator", "--exclude", "--parameter"}, longFile: []string{"--magic-file", "--files-from"}, badShort: "C", bad: []string{"--compile"}},
	"tree":     {kind: allPaths, valued: "LPIHT", long: []string{"--charset", "--filelimit", "--timefmt", "--sort"}, badShort: "oR", bad: []string{"--output"}, widenShort: "l"},
	"readlink": {kind: allPaths}, "realpath": {kind: allPaths, long: []string{"--relative-to", "--relative-base"}},
	"md5sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}}, "sha1sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}},
	"sha224sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}}, "sha256sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}},
	"sha384sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}}, "sha512sum": {kind: allPaths, badShort: "c", bad: []string{"--check"}},
	"b2sum": {kind: allPaths, valued: "l", badShort: "c", bad: []string{"--check"}}, "cksum": {kind: allPaths, valued: "al", badShort: "c", bad: []string{"--check"}},
	"sum":     {kind: allPaths},
	"nl":      {kind: allPaths, valued: "bdfhilnsvw"},
	"od":      {kind: allPaths, valued: "AjNtS", long: []string{"--address-radix", "--skip-bytes", "--read-bytes", "--format", "--endian"}},
	"strings": {kind: allPaths, valued: "ntesT", long: []string{"--bytes", "--radix", "--encoding", "--target", "--output-separator"}},
	"hexdump": {kind: allPaths, valued: "nsef", fileOpts: "f"},
	"column":  {kind: allPaths, valued: "scoNRHTWlEr", long: []string{"--separator", "--output-separator", "--table-columns", "--output-width", "--table-name"}},
	"base64":  {kind: allPaths, valued: "wb", long: []string{"--wrap"}, badShort: "o", bad: []string{"--output"}},
	"cut":     {kind: allPaths, valued: "bcdf", long: []string{"--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter"}},
	"sort": {kind: allPaths, valued: "ktST", long: []string{"--key", "--field-separator", "--buffer-size", "--temporary-directory",
		"--parallel", "--batch-size", "--files0-from", "--sort", "--random-source"}, longFile: []string{"--files0-from", "--random-source"},
		badShort: "o", bad: []string{"--output", "--compress-program"}},
	"uniq":   {kind: allPaths, valued: "fsw", long: []string{"--skip-fields", "--skip-chars", "--check-chars"}, check: uniqReadOnly},
	"comm":   {kind: allPaths, long: []string{"--output-delimiter"}},
	"diff":   {kind: allPaths, valued: "xXIFLUCD", fileOpts: "X", long: []string{"--exclude", "--exclude-from", "--ignore-matching-lines", "--label", "--from-file", "--to-file", "--show-function-line", "--starting-file", "--horizon-lines"}, longFile: []string{"--exclude-from", "--from-file", "--to-file"}},
	"cmp":    {kind: allPaths, valued: "in", long: []string{"--ignore-initial", "--bytes"}},
	"paste":  {kind: allPaths, valued: "d", long: []string{"--delimiters"}},
	"join":   {kind: allPaths, valued: "12jtoeav"},
	"fold":   {kind: allPaths, valued: "w", long: []string{"--width"}},
	"expand": {kind: allPaths, valued: "t", long: []string{"--tabs"}}, "unexpand": {kind: allPaths, valued: "t", long: []string{"--tabs"}},
	"rev": {kind: allPaths}, "tsort": {kind: allPaths},

	"grep": grepSpec, "egrep": grepSpec, "fgrep": grepSpec,
	"rg": {kind: patternThenPaths, valued: "efgtTmABCjMEr", fileOpts: "f", patternOpts: []string{"-e", "--regexp", "-f", "--file", "--files", "--type-list"},
		long: []string{"--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--max-count", "--after-context", "--before-context",
			"--context", "--threads", "--max-columns", "--encoding", "--replace", "--type-add", "--type-clear", "--max-depth", "--max-filesize",
			"--sort", "--sortr", "--color", "--colors", "--engine", "--ignore-file", "--path-separator", "--dfa-size-limit", "--regex-size-limit", "--context-separator", "--field-match-separator", "--field-context-separator"},
		longFile: []string{"--file", "--ignore-file"}, bad: []string{"--pre", "--pre-glob", "--search-zip"}, badShort: "z",
		widenShort: "L", widen: []string{"--follow"}},
	"jq": {kind: patternThenPaths, valued: "fL", fileOpts: "f", patternOpts: []string{"-f", "--from-file"},
		long: []string{"--from-file", "--indent", "--slurpfile", "--rawfile", "--arg", "--argjson"}, longFile: []string{"--from-file"},
		check: jqReadOnly},
	"yq": {kind: patternThenPaths, valued: "Iopf", long: []string{"--indent", "--output-format", "--input-format", "--expression", "--front-matter"},
		badShort: "is", bad: []string{"--inplace", "--in-place", "--split-exp"}, check: yqReadOnly},
}

var grepSpec = &roSpec{kind: patternThenPaths, valued: "efmABCdD", fileOpts: "f",
	patternOpts: []string{"-e", "--regexp", "-f", "--file"},
	long: []string{"--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context",
		"--include", "--exclude", "--exclude-dir", "--exclude-from", "--label", "--directories", "--devices", "--binary-files", "--group-separator"},
	longFile: []string{"--file", "--exclude-from"},
	// -R follows symbolic links, which a hostile workspace can point
	// outside itself; -r does not.
	widenShort: "R", widen: []string{"--dereference-recursive"}}

// customReadOnly are read-only programs whose arguments need their own
// parsing. Each returns why the call is not read-only, or "", and the
// paths it reads.
var customReadOnly = map[string]func(args []field) (string, []string){
	"find": findReadOnly,
	"sed":  sedReadOnly,
	"awk":  awkReadOnly, "gawk": awkReadOnly, "mawk": awkReadOnly, "nawk": awkReadOnly,
	"xxd": xxdReadOnly,
	"tar": tarReadOnly,
	"git": gitReadOnly,
	"go":  goReadOnly,
}

// readOnlyCall returns why the simple command (its expanded fields) is not
// read-only, or "" and the paths it reads.
func readOnlyCall(fs []field) (string, []string) {
	name := fs[0].value
	args := fs[1:]
	if strings.Contains(name, "/") {
		return fmt.Sprintf("%s runs a file, not a known system tool", name), nil
	}
	switch name {
	case "timeout", "nice", "env", "command", "builtin", "xargs":
		return lookThrough(name, args)
	}
	if len(args) == 1 && !args[0].dynamic && (args[0].value == "--version" || (args[0].value == "-V" && versionV[name])) {
		if _, known := specs[name]; known || versionV[name] || versionOnly[name] {
			return "", nil
		}
	}
	if f, ok := customReadOnly[name]; ok {
		for _, a := range args {
			if a.dynamic || a.mayHideOption {
				return fmt.Sprintf("%s has an argument (%s) that is only known at run time and could be an option", name, a.source), nil
			}
		}
		return f(args)
	}
	spec, ok := specs[name]
	if !ok {
		return notWhitelisted(name), nil
	}
	return spec.run(name, args)
}

// versionV are programs whose -V only prints the version.
var versionV = map[string]bool{"rg": true, "jq": true, "yq": true, "tree": true}

// versionOnly are programs that are read-only with --version alone. Tools
// that read the workspace's configuration first (go with go.mod's
// toolchain line, npm with .npmrc, cargo, pip) are left out.
var versionOnly = map[string]bool{
	"node": true, "python": true, "python3": true, "rustc": true, "gcc": true,
	"make": true, "docker": true, "bash": true, "curl": true, "java": true, "awk": true, "gawk": true,
	"perl": true, "ruby": true, "cc": true, "clang": true, "tar": true, "xxd": true,
}

func notWhitelisted(name string) string {
	switch name {
	case "eval", "exec", "source", ".":
		return fmt.Sprintf("%s runs its arguments as shell code", name)
	case "sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh",
		"python", "python2", "python3", "perl", "ruby", "node", "deno", "bun", "php", "lua":
		return fmt.Sprintf("%s runs arbitrary code", name)
	case "npm", "pnpm", "yarn", "npx":
		return fmt.Sprintf("%s reads the workspace's .npmrc and package.json, which can make it run code or reach the network", name)
	case "docker", "podman", "kubectl":
		return fmt.Sprintf("%s talks to a daemon or a cluster", name)
	case "cargo":
		return "cargo reads the workspace's configuration, which can make it run code or reach the network"
	case "make":
		return "make runs the Makefile's commands, even with -n through $(shell …)"
	case "gofmt":
		return "gofmt writes Go telemetry counters under ~/.config/go, even with -l or -d"
	}
	return fmt.Sprintf("%s is not a known read-only command", name)
}

// lookThrough checks a wrapper that runs another command: the wrapper
// itself must change nothing and the command it runs must be read-only.
func lookThrough(name string, args []field) (string, []string) {
	strs := make([]string, len(args))
	for i, a := range args {
		if a.dynamic || a.mayHideOption {
			return fmt.Sprintf("%s has an argument (%s) that is only known at run time", name, a.source), nil
		}
		strs[i] = a.value
	}
	start := innerStart(name, strs)
	opts := strs
	if start >= 0 {
		opts = strs[:start]
	}
	switch name {
	case "env":
		for _, o := range opts {
			if strings.Contains(o, "=") && !strings.HasPrefix(o, "-") {
				return "env with an assignment changes the program's environment", nil
			}
			if o == "-S" || o == "-C" || strings.HasPrefix(o, "--split-string") || strings.HasPrefix(o, "--chdir") || strings.HasPrefix(o, "-S") {
				return fmt.Sprintf("env %s changes how the program is run", o), nil
			}
		}
	case "command":
		if slices.Contains(opts, "-v") || slices.Contains(opts, "-V") {
			return "", nil
		}
	case "xargs":
		for _, o := range opts {
			if o == "-a" || o == "--arg-file" || strings.HasPrefix(o, "--arg-file=") {
				return "xargs -a reads its arguments from a file", nil
			}
		}
	case "timeout":
		if start < 0 {
			return "timeout without a command", nil
		}
	}
	if start < 0 {
		if name == "command" || name == "builtin" {
			return fmt.Sprintf("%s without a command", name), nil
		}
		return "", nil // env, nice and xargs alone print or echo
	}
	inner := args[start:]
	if inner[0].glob {
		return fmt.Sprintf("the command name %s is only known at run time", inner[0].source), nil
	}
	if name == "xargs" {
		spec := specs[inner[0].value]
		if spec == nil || spec.kind != noPaths || !spec.dynamicOK {
			return fmt.Sprintf("xargs gives %s operands that are only known at run time", inner[0].value), nil
		}
	}
	return readOnlyCall(inner)
}

// An option is listed as taking a value only when its value is required:
// GNU getopt gives an optional value only attached (--opt=value, -w8), so
// --color x leaves x an operand. Listing a flag or an optional one would
// hide the next operand from Reads; leaving out a valued one only adds its
// value to Reads, which costs at most a prompt.

// run checks a call of a spec'd program and returns the paths it reads.
func (s *roSpec) run(name string, args []field) (string, []string) {
	var ops []field
	var reads []string
	patternGiven := false
	dashdash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		// A glob that could expand to an option matters only for a
		// program with options that write or run code.
		if !dashdash && (a.dynamic || (a.mayHideOption && (len(s.bad) > 0 || s.badShort != "" || s.check != nil))) {
			if !s.dynamicOK {
				return fmt.Sprintf("%s has an argument (%s) that is only known at run time and could be an option or a path", name, a.source), nil
			}
			ops = append(ops, a)
			continue
		}
		switch {
		case dashdash || v == "-" || !strings.HasPrefix(v, "-") || name == "echo" || name == "test" || name == "[" || name == "printf":
			ops = append(ops, a)
		case v == "--":
			dashdash = true
		case strings.HasPrefix(v, "--"):
			opt, val, hasVal := strings.Cut(v, "=")
			if slices.Contains(s.bad, opt) {
				return fmt.Sprintf("%s %s writes a file or runs a program", name, opt), nil
			}
			if slices.Contains(s.widen, opt) {
				return fmt.Sprintf("%s %s follows symbolic links out of the paths it is given", name, opt), nil
			}
			takes := slices.Contains(s.long, opt)
			if takes && !hasVal {
				if i+1 >= len(args) {
					break
				}
				i++
				val = args[i].value
				if args[i].dynamic {
					return fmt.Sprintf("%s %s has a value only known at run time", name, opt), nil
				}
			}
			if slices.Contains(s.patternOpts, opt) {
				patternGiven = true
			}
			if takes && slices.Contains(s.longFile, opt) {
				reads = append(reads, val)
			}
		default:
			// A cluster of short options: -rn, -n20, -e pattern.
			for j := 1; j < len(v); j++ {
				c := v[j]
				if strings.IndexByte(s.badShort, c) >= 0 {
					return fmt.Sprintf("%s -%c writes a file or runs a program", name, c), nil
				}
				if strings.IndexByte(s.widenShort, c) >= 0 {
					return fmt.Sprintf("%s -%c follows symbolic links out of the paths it is given", name, c), nil
				}
				if strings.IndexByte(s.valued, c) < 0 {
					continue
				}
				val := v[j+1:]
				if val == "" && i+1 < len(args) {
					i++
					if args[i].dynamic {
						return fmt.Sprintf("%s -%c has a value only known at run time", name, c), nil
					}
					val = args[i].value
				}
				if slices.Contains(s.patternOpts, "-"+string(c)) {
					patternGiven = true
				}
				if strings.IndexByte(s.fileOpts, c) >= 0 {
					reads = append(reads, val)
				}
				break
			}
		}
	}
	if s.check != nil {
		strs := make([]string, len(args))
		for i, a := range args {
			strs[i] = a.value
		}
		if why := s.check(strs); why != "" {
			return why, nil
		}
	}
	switch s.kind {
	case allPaths:
	case patternThenPaths:
		if !patternGiven && len(ops) > 0 {
			ops = ops[1:]
		}
	default:
		return "", reads
	}
	for _, o := range ops {
		if o.dynamic {
			return fmt.Sprintf("%s reads %s, a path only known at run time", name, o.source), nil
		}
		if o.value != "-" {
			reads = append(reads, o.value)
		}
	}
	return "", reads
}

// shortFlag reports whether a cluster of short options (-rni) contains f.
func shortFlag(arg string, f byte) bool {
	return len(arg) > 1 && arg[0] == '-' && arg[1] != '-' && strings.IndexByte(arg[1:], f) >= 0
}

// firstBad returns the first argument that is in bad (exactly, or as
// --opt=value), for messages.
func firstBad(args []string, bad ...string) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		for _, b := range bad {
			if a == b || (strings.HasPrefix(b, "--") && strings.HasPrefix(a, b+"=")) {
				return a
			}
		}
	}
	return ""
}

// yqReadOnly refuses load(…), which reads a file the analysis does not
// list.
func yqReadOnly(args []string) string {
	for _, a := range args {
		if strings.Contains(a, "load") {
			return "yq load reads a file the analysis does not list"
		}
	}
	return ""
}

func printfReadOnly(args []string) string {
	if len(args) > 0 && strings.HasPrefix(args[0], "-v") {
		return "printf -v assigns a variable, and its name can hold an array subscript that runs code"
	}
	return ""
}

func testReadOnly(args []string) string {
	for _, a := range args {
		if a == "-v" || a == "-R" {
			return "test -v evaluates an array subscript, which can run code"
		}
	}
	return ""
}

func readReadOnly(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if last := a[len(a)-1]; strings.IndexByte("adeinNptu", last) >= 0 && strings.IndexByte("dinNptu", last) >= 0 {
				i++ // the option's value
			}
			continue
		}
		if !isIdentifier(a) || !safeAssignName(a, false) {
			return fmt.Sprintf("read assigns %s, which can change how programs run or evaluate an array subscript", a)
		}
	}
	return ""
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func uniqReadOnly(args []string) string {
	positional := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || a == "-s" || a == "-w":
			i++ // these take a value
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			positional++
		}
	}
	if positional > 1 {
		return "uniq with a second file argument writes that file"
	}
	return ""
}

func dateReadOnly(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" || a == "--date" || a == "-r" || a == "--reference" || a == "-f" || a == "--file":
			i++ // the value is a date string or a file, not a new time
		case a == "-s" || strings.HasPrefix(a, "--set") || (shortFlag(a, 's') && !strings.HasPrefix(a, "-d") && !strings.HasPrefix(a, "-r") && !strings.HasPrefix(a, "-f")):
			return "date -s sets the system clock"
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return "date with an argument may set the system clock"
		}
	}
	return ""
}

// hostnameReadOnly accepts hostname alone or with -s: a name sets the host
// name, and -f, -A, -d, -i and -I look the name up on the network.
func hostnameReadOnly(args []string) string {
	for _, a := range args {
		if a != "-s" && a != "--short" {
			return fmt.Sprintf("hostname %s sets the host name or looks it up on the network", a)
		}
	}
	return ""
}

// jqReadOnly refuses --slurpfile and --rawfile only in the sense that
// their file is not a path operand the generic parse sees: jq has no
// function that writes or runs anything, so only the reads matter, and
// those two options take a name and then a file.
func jqReadOnly(args []string) string {
	for i, a := range args {
		if (a == "--slurpfile" || a == "--rawfile") && i+2 < len(args) {
			return "jq --slurpfile and --rawfile read a file the analysis does not list"
		}
		if a == "--args" || a == "--jsonargs" {
			return ""
		}
	}
	return ""
}

// findReadOnly accepts find without actions that run programs or write
// files. Its start points are read.
func findReadOnly(args []field) (string, []string) {
	var reads []string
	starts := true
	skip := findOptions(args)
	for _, f := range args[skip:] {
		a := f.value
		if starts && (strings.HasPrefix(a, "-") || a == "(" || a == "!") {
			starts = false
		}
		if starts {
			reads = append(reads, a)
			continue
		}
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir":
			return fmt.Sprintf("find %s runs other commands", a), nil
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			return fmt.Sprintf("find %s changes files", a), nil
		case "-follow":
			return "find -follow follows symbolic links out of the listed paths", nil
		}
	}
	for _, f := range args[:skip] {
		if f.value == "-L" || f.value == "-H" {
			return fmt.Sprintf("find %s follows symbolic links out of the listed paths", f.value), nil
		}
	}
	return "", reads
}

// xxdReadOnly accepts xxd with at most an input file: a second operand is
// an output file.
func xxdReadOnly(args []field) (string, []string) {
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i].value
		switch {
		case a == "-c" || a == "-g" || a == "-l" || a == "-s" || a == "-o" || a == "-n" || a == "-cols" || a == "-len" || a == "-seek" || a == "-name" || a == "-groupsize" || a == "-offset":
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) > 1 {
		return "xxd with a second file operand writes that file", nil
	}
	return "", slices.DeleteFunc(ops, func(s string) bool { return s == "-" })
}

// tarReadOnly accepts only listing an archive (tar -t, tar tf x.tar,
// tar --list) with options that run no program.
func tarReadOnly(args []field) (string, []string) {
	if len(args) == 0 {
		return "tar without arguments", nil
	}
	list := false
	var reads []string
	for i := 0; i < len(args); i++ {
		a := args[i].value
		cluster := ""
		switch {
		case i == 0 && !strings.HasPrefix(a, "-"):
			cluster = a // old style: tar tvf x.tar
		case strings.HasPrefix(a, "--"):
			opt, val, hasVal := strings.Cut(a, "=")
			switch opt {
			case "--list":
				list = true
			case "--file":
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i].value
				}
				reads = append(reads, val)
			case "--verbose", "--gzip", "--bzip2", "--xz", "--zstd", "--lzma", "--auto-compress", "--numeric-owner", "--wildcards", "--no-wildcards", "--ignore-case", "--quiet":
			default:
				return fmt.Sprintf("tar %s is not known to be read-only", opt), nil
			}
			continue
		case strings.HasPrefix(a, "-"):
			cluster = a[1:]
		default:
			reads = append(reads, a) // a member name; harmless as a path
			continue
		}
		for j := 0; j < len(cluster); j++ {
			switch c := cluster[j]; c {
			case 't':
				list = true
			case 'v', 'z', 'j', 'J', 'a', 'Z', 'p':
			case 'f':
				val := cluster[j+1:]
				if val == "" && i+1 < len(args) {
					i++
					val = args[i].value
				}
				reads = append(reads, val)
				j = len(cluster)
			default:
				return fmt.Sprintf("tar -%c is not read-only", c), nil
			}
		}
	}
	if !list {
		return "tar without -t writes or extracts files", nil
	}
	return "", reads
}

// goReadOnly refuses every go command: in a module whose go.mod names
// another toolchain, even go version and go env download and run that
// toolchain, and go list, build, vet and test can fetch modules or run code
// from the workspace.
func goReadOnly(args []field) (string, []string) {
	sub := ""
	if len(args) > 0 {
		sub = args[0].value
	}
	return fmt.Sprintf("go %s reads the workspace's go.mod, which can make it download and run a toolchain or modules", sub), nil
}

// sedReadOnly accepts sed without in-place editing whose scripts, given
// inline, contain no w, W or e command and no s///w or s///e flag. A script
// from a file (-f) cannot be inspected and is refused.
func sedReadOnly(fs []field) (string, []string) {
	args := values(fs)
	var scripts, files []string
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			for _, f := range args[i+1:] {
				if !explicit {
					scripts = append(scripts, f)
					explicit = true
					continue
				}
				files = append(files, f)
			}
			i = len(args)
		case a == "-i" || strings.HasPrefix(a, "--in-place") || (shortFlag(a, 'i') && !strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "-l")):
			return "sed -i edits files in place", nil
		case a == "-f" || strings.HasPrefix(a, "--file") || (shortFlag(a, 'f') && !strings.HasPrefix(a, "-e")):
			return "sed -f runs a script from a file that cannot be checked", nil
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
			explicit = true
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
			explicit = true
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			scripts = append(scripts, a[2:])
			explicit = true
		case a == "-l":
			i++
		case strings.HasPrefix(a, "-") && a != "-":
			if strings.IndexByte(a, 'e') >= 0 && !strings.HasPrefix(a, "--") {
				// -ne 'script': the e is the last letter and takes the next arg.
				if strings.HasSuffix(a, "e") && i+1 < len(args) {
					scripts = append(scripts, args[i+1])
					i++
					explicit = true
					continue
				}
				return fmt.Sprintf("sed option %s is not understood", a), nil
			}
		default:
			if !explicit && len(scripts) == 0 {
				scripts = append(scripts, a)
				explicit = true
				continue
			}
			files = append(files, a)
		}
	}
	for _, s := range scripts {
		if why := sedScriptWrites(s); why != "" {
			return why, nil
		}
	}
	return "", slices.DeleteFunc(files, func(s string) bool { return s == "-" })
}

// sedScriptWrites scans a sed script for commands that write files or run
// commands. Anything it does not understand counts as writing.
func sedScriptWrites(s string) string {
	why, _, _ := sedScript(s)
	return why
}

// sedFileName reads the file name of w, W or s///w at i: after blanks, the
// rest of the line (GNU sed reads ; and } as part of the name).
func sedFileName(s string, i int) (string, int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	j := i
	for j < len(s) && s[j] != '\n' {
		j++
	}
	return s[i:j], j
}

// sedScript scans a sed script for commands that write files or run
// commands, and returns the first such reason with the files the w, W and
// s///w commands write; other reports a reason besides those writes (an e,
// an r, a part the scan does not read). Anything it does not understand
// counts as writing.
func sedScript(s string) (why string, writes []string, other bool) {
	note := func(w string) {
		if why == "" {
			why = w
		}
		other = other || !strings.HasSuffix(w, "w writes a file")
	}
	i := 0
	skipTo := func(stop string) {
		for i < len(s) && strings.IndexByte(stop, s[i]) < 0 {
			i++
		}
	}
	// delimited skips a delimited regex or replacement, honouring escapes.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				return false
			}
			i++
		}
		return false
	}
	for i < len(s) {
		// Skip separators and the address.
		for i < len(s) && strings.IndexByte(" \t\n;{}!0123456789$,~+", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			return why, writes, other
		}
		c := s[i]
		switch {
		case c == '/':
			i++
			if !delimited('/') {
				note("sed script could not be checked")
				return why, writes, other
			}
			continue
		case c == '\\' && i+1 < len(s):
			d := s[i+1]
			i += 2
			if !delimited(d) {
				note("sed script could not be checked")
				return why, writes, other
			}
			continue
		}
		i++
		switch c {
		case 'w', 'W':
			note("sed w writes a file")
			var f string
			f, i = sedFileName(s, i)
			writes = append(writes, f)
		case 'e':
			note("sed e runs a command")
			skipTo("\n")
		case 's', 'y':
			if i >= len(s) {
				note("sed script could not be checked")
				return why, writes, other
			}
			d := s[i]
			if d == '\\' || d == '\n' {
				note("sed script could not be checked")
				return why, writes, other
			}
			i++
			if !delimited(d) || !delimited(d) {
				note("sed script could not be checked")
				return why, writes, other
			}
			if c == 's' {
				for i < len(s) && strings.IndexByte(";\n}", s[i]) < 0 {
					switch s[i] {
					case 'w', 'W':
						note("sed s///w writes a file")
						var f string
						f, i = sedFileName(s, i+1)
						writes = append(writes, f)
						continue
					case 'e':
						note("sed s///e runs a command")
					case 'g', 'p', 'i', 'I', 'm', 'M', ' ', '\t', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					default:
						note("sed script could not be checked")
						return why, writes, other
					}
					i++
				}
			}
		case 'a', 'i', 'c':
			skipTo("\n")
		case 'r', 'R':
			note("sed r reads a file the analysis does not list")
			skipTo("\n")
		case 'b', 't', 'T', ':':
			skipTo(";\n")
		case 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'l', 'q', 'Q', '=', 'z', 'F':
		case '#':
			skipTo("\n")
		default:
			note("sed script could not be checked")
			return why, writes, other
		}
	}
	return why, writes, other
}

// awkReadOnly accepts awk with an inline program that has no system(),
// no pipes (print | "cmd", "cmd" | getline), no output redirection
// (print > file), and no -f program file or gawk -i inplace. Operands are
// files, except var=value assignments.
func awkReadOnly(fs []field) (string, []string) {
	args := values(fs)
	program := ""
	havePrg := false
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !havePrg && (a == "-f" || strings.HasPrefix(a, "-f") || a == "--file" || strings.HasPrefix(a, "--file=") ||
			a == "-E" || a == "--exec"):
			return "awk -f runs a program from a file that cannot be checked", nil
		case !havePrg && (a == "-i" || strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--include") || a == "-l" || strings.HasPrefix(a, "--load") || strings.HasPrefix(a, "-l")):
			return "awk -i/-l loads an extension or library, such as inplace", nil
		case !havePrg && (a == "-v" || a == "-F" || a == "--assign" || a == "--field-separator"):
			if a == "-v" || a == "--assign" {
				if i+1 < len(args) && !safeAwkAssign(args[i+1]) {
					return "awk -v assigns a special variable", nil
				}
			}
			i++
		case !havePrg && strings.HasPrefix(a, "-v"):
			if !safeAwkAssign(a[2:]) {
				return "awk -v assigns a special variable", nil
			}
		case !havePrg && strings.HasPrefix(a, "-F"):
		case !havePrg && a == "--":
			if i+1 < len(args) {
				program, havePrg = args[i+1], true
				i++
			}
		case !havePrg && strings.HasPrefix(a, "-") && len(a) > 1:
			switch a {
			case "--posix", "--traditional", "--re-interval", "-P", "-c", "-r", "--characters-as-bytes", "-b", "-S", "--sandbox", "-O", "--optimize", "-N":
			default:
				return fmt.Sprintf("awk option %s is not known to be read-only", a), nil
			}
		case !havePrg:
			program, havePrg = a, true
		default:
			if k := strings.IndexByte(a, '='); k > 0 && isIdentifier(a[:k]) {
				if !safeAwkAssign(a) {
					return "awk assigns a special variable", nil
				}
				continue
			}
			if a != "-" {
				files = append(files, a)
			}
		}
	}
	if !havePrg {
		return "awk without a program", nil
	}
	if why := awkProgramWrites(program); why != "" {
		return why, nil
	}
	return "", files
}

// safeAwkAssign accepts var=value where var is not one of the special
// variables that change where output goes or what is read.
func safeAwkAssign(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	if !ok || !isIdentifier(name) {
		return false
	}
	switch name {
	case "ENVIRON", "PROCINFO", "ARGV", "ARGC":
		return false
	}
	return true
}

// awkProgramWrites scans an awk program outside string literals and
// regular expressions for what writes or runs: system(, a pipe |, output
// redirection > or >> after print/printf, getline from a command, close()
// is harmless. Anything ambiguous counts as writing.
func awkProgramWrites(p string) string {
	code := awkCode(p)
	if strings.Contains(code, "system") {
		return "awk system() runs a command"
	}
	if strings.Contains(strings.ReplaceAll(code, "||", ""), "|") {
		return "awk | runs a command"
	}
	if strings.Contains(code, "getline") {
		return "awk getline reads from a command or a file the analysis does not list"
	}
	for _, kw := range []string{"print", "printf"} {
		for i := strings.Index(code, kw); i >= 0; {
			rest := code[i+len(kw):]
			end := strings.IndexAny(rest, ";}\n")
			if end < 0 {
				end = len(rest)
			}
			if strings.Contains(rest[:end], ">") {
				return "awk print > writes a file"
			}
			next := strings.Index(rest, kw)
			if next < 0 {
				break
			}
			i = i + len(kw) + next
		}
	}
	for _, f := range []string{"fflush", "@load", "@include", "@namespace", "extension", "PROCINFO", "ENVIRON[", "/inet/"} {
		if strings.Contains(code, f) || strings.Contains(p, "/inet") {
			return fmt.Sprintf("awk %s is not known to be read-only", f)
		}
	}
	return ""
}

// awkCode returns the program with string literals and regular expression
// literals blanked out, so that a "|" or ">" inside them is not code. A
// "/" that starts a regular expression follows an operator or the start.
func awkCode(p string) string {
	var b strings.Builder
	prev := byte('(')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '"':
			b.WriteByte('"')
			for i++; i < len(p) && p[i] != '"'; i++ {
				if p[i] == '\\' {
					i++
				}
			}
			b.WriteByte('"')
			prev = '"'
			continue
		case c == '/' && strings.IndexByte("(,~!&|{};\n=?:", prev) >= 0:
			b.WriteByte('/')
			for i++; i < len(p) && p[i] != '/'; i++ {
				if p[i] == '\\' {
					i++
				}
				if i < len(p) && p[i] == '\n' {
					break
				}
			}
			b.WriteByte('/')
			prev = '/'
			continue
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			continue
		}
		b.WriteByte(c)
		if c != ' ' && c != '\t' {
			prev = c
		}
	}
	return b.String()
}

// gitSubcommand finds the git subcommand after the global options, which
// must be ones that cannot make git run other code. -c is refused:
// -c core.pager=… or -c alias.x=!… runs anything.
func gitSubcommand(args []string) (sub string, rest, reads []string, why string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "--git-dir" || a == "--work-tree":
			if i+1 < len(args) {
				reads = append(reads, args[i+1])
			}
			i++
		case strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
			_, v, _ := strings.Cut(a, "=")
			reads = append(reads, v)
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks" || a == "--literal-pathspecs" || a == "--no-replace-objects":
		case strings.HasPrefix(a, "-"):
			return "", nil, nil, fmt.Sprintf("git option %s is not known to be read-only", a)
		default:
			return a, args[i+1:], reads, ""
		}
	}
	return "", nil, nil, "git without a subcommand"
}

// gitReadOnly accepts git subcommands that only read the repository and
// reach neither the network nor a program from the configuration. Those
// that can produce a diff (diff, show, log -p, blame) must say
// --no-ext-diff and --no-textconv, because a repository's configuration
// can name an external diff or a textconv program that git would run.
func gitReadOnly(fs []field) (string, []string) {
	sub, rest, reads, why := gitSubcommand(values(fs))
	if why != "" {
		return why, nil
	}
	if b := firstBad(rest, "--no-index"); b != "" {
		return fmt.Sprintf("git %s --no-index reads files outside the repository", sub), nil
	}
	if b := firstBad(rest, "--output", "--open-files-in-pager", "--ext-diff", "--textconv", "--filters", "--exec", "--upload-pack", "--paginate"); b != "" {
		return fmt.Sprintf("git %s %s writes a file or runs a program", sub, b), nil
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "-O") {
			return fmt.Sprintf("git %s %s may open files in a program", sub, a), nil
		}
	}
	onlyFlags := func(allowed ...string) bool {
		for _, a := range rest {
			if !slices.Contains(allowed, a) {
				return false
			}
		}
		return true
	}
	noDrivers := slices.Contains(rest, "--no-ext-diff") && slices.Contains(rest, "--no-textconv")
	patch := slices.ContainsFunc(rest, func(a string) bool {
		return a == "-p" || a == "-u" || a == "--patch" || strings.HasPrefix(a, "--stat") || a == "--numstat" || a == "--shortstat" ||
			a == "--dirstat" || a == "-U" || strings.HasPrefix(a, "-U") || a == "--word-diff" || a == "--cc" || a == "-c" || a == "-m" ||
			a == "--raw" || a == "--patch-with-stat" || a == "-G" || strings.HasPrefix(a, "-G") || strings.HasPrefix(a, "-S") || a == "--follow" || strings.HasPrefix(a, "-L")
	})
	ok := false
	switch sub {
	case "status", "rev-parse", "ls-files", "ls-tree", "describe", "show-ref", "rev-list",
		"merge-base", "name-rev", "count-objects", "check-ignore", "check-attr", "version", "shortlog", "var":
		ok = true
	case "grep":
		ok = true
	case "cat-file":
		ok = firstBad(rest, "--batch-command") == ""
	case "log", "whatchanged":
		ok = !patch || noDrivers
	case "diff", "show", "blame", "annotate", "range-diff", "format-patch":
		// --name-only and --name-status compare no contents, so no
		// driver runs.
		namesOnly := (sub == "diff" || sub == "show") && !patch &&
			slices.ContainsFunc(rest, func(a string) bool { return a == "--name-only" || a == "--name-status" })
		ok = (noDrivers || namesOnly) && sub != "format-patch"
		if !ok {
			return fmt.Sprintf("git %s can run an external diff or textconv program from the repository's configuration; add --no-ext-diff --no-textconv", sub), nil
		}
	case "branch":
		ok = onlyFlags("--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--no-color", "--color")
	case "tag":
		ok = len(rest) == 0 || rest[0] == "-l" || rest[0] == "--list"
	case "remote":
		ok = onlyFlags("-v", "--verbose") || (len(rest) > 0 && rest[0] == "get-url")
	case "config":
		ok = len(rest) > 0 && firstBad(rest, "--add", "--unset", "--unset-all", "--replace-all",
			"--rename-section", "--remove-section", "--edit", "-e") == "" &&
			firstBad(rest, "--get", "--get-all", "--get-regexp", "--list", "-l") != ""
	case "reflog":
		ok = len(rest) == 0 || rest[0] == "show" || (strings.HasPrefix(rest[0], "-") && firstBad(rest, "expire", "delete") == "")
	case "stash", "worktree":
		ok = len(rest) > 0 && rest[0] == "list" && (sub != "stash" || !patch || noDrivers)
	}
	if !ok {
		return fmt.Sprintf("git %s is not read-only", sub), nil
	}
	return "", reads
}
