package shell

import (
	"fmt"
	"strings"
)

// plainReadOnly are commands that change nothing whatever their arguments,
// so a variable or glob among the arguments cannot make them write.
var plainReadOnly = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true,
	"grep": true, "egrep": true, "fgrep": true, "echo": true, "printf": true,
	"pwd": true, "which": true, "type": true, "stat": true, "du": true,
	"df": true, "cut": true, "diff": true, "cmp": true, "comm": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true,
	"whoami": true, "id": true, "uname": true, "printenv": true, "true": true,
	"false": true, "test": true, "[": true, "jq": true, "cd": true, "tr": true,
	"nl": true, "seq": true, "md5sum": true, "sha1sum": true, "sha256sum": true,
	"sha512sum": true, "hexdump": true, "od": true, "column": true, ":": true,
}

// checkedReadOnly are commands that are read-only only with some arguments.
// Each check returns why the call is not read-only, or "". The arguments
// may not hide an option: a variable or a leading glob is refused before
// the check runs.
var checkedReadOnly = map[string]func(args []string) string{
	"find":     findReadOnly,
	"sed":      sedReadOnly,
	"sort":     sortReadOnly,
	"uniq":     uniqReadOnly,
	"rg":       rgReadOnly,
	"tree":     treeReadOnly,
	"file":     fileReadOnly,
	"date":     dateReadOnly,
	"hostname": hostnameReadOnly,
	"env":      envReadOnly,
	"git":      gitReadOnly,
	"go":       goReadOnly,
	"npm":      pkgManagerReadOnly,
	"pnpm":     pkgManagerReadOnly,
	"yarn":     pkgManagerReadOnly,
	"docker":   dockerReadOnly,
	"cargo":    cargoReadOnly,
}

// readOnlyCall returns why the simple command name+args is not read-only,
// or "" when it is.
func readOnlyCall(name string, args []wordInfo) string {
	if plainReadOnly[name] {
		return ""
	}
	check, ok := checkedReadOnly[name]
	if !ok {
		return notWhitelisted(name)
	}
	lits := make([]string, len(args))
	for i, a := range args {
		if a.dynamic || a.mayHideOption {
			return fmt.Sprintf("%s has an argument (%s) that is only known at run time and could be an option", name, a.source)
		}
		lits[i] = a.value
	}
	return check(lits)
}

func notWhitelisted(name string) string {
	switch name {
	case "eval", "exec", "source", ".":
		return fmt.Sprintf("%s runs its arguments as shell code", name)
	case "sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh",
		"python", "python2", "python3", "perl", "ruby", "node", "deno", "bun", "php", "lua":
		return fmt.Sprintf("%s runs arbitrary code", name)
	case "xargs":
		return "xargs runs other commands"
	case "awk", "gawk", "mawk", "nawk":
		return fmt.Sprintf("%s can write files and run commands", name)
	}
	return fmt.Sprintf("%s is not a known read-only command", name)
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

// shortFlag reports whether a cluster of short options (-rni) contains f.
func shortFlag(arg string, f byte) bool {
	return len(arg) > 1 && arg[0] == '-' && arg[1] != '-' && strings.IndexByte(arg[1:], f) >= 0
}

func findReadOnly(args []string) string {
	for _, a := range args {
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir":
			return fmt.Sprintf("find %s runs other commands", a)
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			return fmt.Sprintf("find %s changes files", a)
		}
	}
	return ""
}

func sortReadOnly(args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-o" || strings.HasPrefix(a, "--output") || (shortFlag(a, 'o') && !strings.HasPrefix(a, "-k") && !strings.HasPrefix(a, "-t")) {
			return "sort -o writes a file"
		}
		if strings.HasPrefix(a, "--compress-program") {
			return "sort --compress-program runs another program"
		}
	}
	return ""
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

func rgReadOnly(args []string) string {
	if b := firstBad(args, "--pre", "--pre-glob"); b != "" {
		return fmt.Sprintf("rg %s runs other programs", b)
	}
	return ""
}

func treeReadOnly(args []string) string {
	for _, a := range args {
		if a == "-o" || shortFlag(a, 'o') {
			return "tree -o writes a file"
		}
	}
	return ""
}

func fileReadOnly(args []string) string {
	for _, a := range args {
		if a == "-C" || a == "--compile" || shortFlag(a, 'C') {
			return "file -C writes a compiled magic file"
		}
	}
	return ""
}

func dateReadOnly(args []string) string {
	for _, a := range args {
		if a == "-s" || strings.HasPrefix(a, "--set") || shortFlag(a, 's') {
			return "date -s sets the system clock"
		}
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return "date with an argument may set the system clock"
		}
	}
	return ""
}

func hostnameReadOnly(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-F" || strings.HasPrefix(a, "--file") || a == "-b" || a == "--boot" {
			return "hostname with an argument sets the host name"
		}
	}
	return ""
}

func envReadOnly(args []string) string {
	for _, a := range args {
		if a != "-0" && a != "--null" {
			return "env with arguments runs a command or changes its environment"
		}
	}
	return ""
}

// sedReadOnly accepts sed without in-place editing whose scripts, given
// inline, contain no w, W or e command and no s///w or s///e flag. A script
// from a file (-f) cannot be inspected and is refused.
func sedReadOnly(args []string) string {
	var scripts []string
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "-i" || strings.HasPrefix(a, "--in-place") || (shortFlag(a, 'i') && !strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "-l")):
			return "sed -i edits files in place"
		case a == "-f" || strings.HasPrefix(a, "--file") || (shortFlag(a, 'f') && !strings.HasPrefix(a, "-e")):
			return "sed -f runs a script from a file that cannot be checked"
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
				return fmt.Sprintf("sed option %s is not understood", a)
			}
		default:
			if !explicit && len(scripts) == 0 {
				scripts = append(scripts, a)
				explicit = true
			}
		}
	}
	for _, s := range scripts {
		if why := sedScriptWrites(s); why != "" {
			return why
		}
	}
	return ""
}

// sedScriptWrites scans a sed script for commands that write files or run
// commands. Anything it does not understand counts as writing.
func sedScriptWrites(s string) string {
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
			return ""
		}
		c := s[i]
		switch {
		case c == '/':
			i++
			if !delimited('/') {
				return "sed script could not be checked"
			}
			continue
		case c == '\\' && i+1 < len(s):
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return "sed script could not be checked"
			}
			continue
		}
		i++
		switch c {
		case 'w', 'W':
			return "sed w writes a file"
		case 'e':
			return "sed e runs a command"
		case 's', 'y':
			if i >= len(s) {
				return "sed script could not be checked"
			}
			d := s[i]
			if d == '\\' || d == '\n' {
				return "sed script could not be checked"
			}
			i++
			if !delimited(d) || !delimited(d) {
				return "sed script could not be checked"
			}
			if c == 's' {
				for i < len(s) && strings.IndexByte(";\n}", s[i]) < 0 {
					switch s[i] {
					case 'w', 'W':
						return "sed s///w writes a file"
					case 'e':
						return "sed s///e runs a command"
					case 'g', 'p', 'i', 'I', 'm', 'M', ' ', '\t', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					default:
						return "sed script could not be checked"
					}
					i++
				}
			}
		case 'a', 'i', 'c':
			skipTo("\n")
		case 'b', 't', 'T', ':', 'r', 'R':
			skipTo(";\n")
		case 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'l', 'q', 'Q', '=', 'z', 'F':
		case '#':
			skipTo("\n")
		default:
			return "sed script could not be checked"
		}
	}
	return ""
}

// gitSubcommand finds the git subcommand after the global options, which
// must be ones that cannot make git run other code. -c is refused:
// -c core.pager=… or -c alias.x=!… runs anything.
func gitSubcommand(args []string) (sub string, rest []string, why string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "--git-dir" || a == "--work-tree":
			i++
		case strings.HasPrefix(a, "--git-dir=") || strings.HasPrefix(a, "--work-tree="):
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks" || a == "--literal-pathspecs":
		case strings.HasPrefix(a, "-"):
			return "", nil, fmt.Sprintf("git option %s is not known to be read-only", a)
		default:
			return a, args[i+1:], ""
		}
	}
	return "", nil, "git without a subcommand"
}

func gitReadOnly(args []string) string {
	sub, rest, why := gitSubcommand(args)
	if why != "" {
		return why
	}
	if b := firstBad(rest, "--output", "--open-files-in-pager", "--ext-diff", "--textconv"); b != "" {
		return fmt.Sprintf("git %s %s writes a file or runs a program", sub, b)
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "-O") {
			return fmt.Sprintf("git %s %s may open files in a program", sub, a)
		}
	}
	onlyFlags := func(allowed ...string) bool {
		for _, a := range rest {
			ok := false
			for _, f := range allowed {
				if a == f {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}
	ok := false
	switch sub {
	case "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame",
		"describe", "shortlog", "grep", "show-ref", "cat-file", "rev-list",
		"merge-base", "name-rev", "whatchanged", "count-objects", "check-ignore", "version":
		ok = true
	case "branch":
		ok = onlyFlags("--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--no-color", "--color")
	case "tag":
		ok = len(rest) == 0 || rest[0] == "-l" || rest[0] == "--list"
	case "remote":
		ok = onlyFlags("-v", "--verbose") || (len(rest) > 0 && (rest[0] == "show" || rest[0] == "get-url"))
	case "config":
		ok = len(rest) > 0 && firstBad(rest, "--add", "--unset", "--unset-all", "--replace-all",
			"--rename-section", "--remove-section", "--edit", "-e") == "" &&
			firstBad(rest, "--get", "--get-all", "--get-regexp", "--list", "-l") != ""
	case "reflog":
		ok = len(rest) == 0 || rest[0] == "show" || (strings.HasPrefix(rest[0], "-") && firstBad(rest, "expire", "delete") == "")
	case "stash", "worktree":
		ok = len(rest) > 0 && rest[0] == "list"
	}
	if !ok {
		return fmt.Sprintf("git %s is not read-only", sub)
	}
	return ""
}

// firstWord returns the first argument that is not an option.
func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

func goReadOnly(args []string) string {
	sub := firstWord(args)
	switch sub {
	case "version", "list", "doc":
		if firstBad(args, "-toolexec", "--toolexec", "-exec") == "" {
			return ""
		}
	case "env":
		if firstBad(args, "-w", "-u") == "" {
			return ""
		}
	}
	return fmt.Sprintf("go %s is not read-only", sub)
}

func pkgManagerReadOnly(args []string) string {
	switch sub := firstWord(args); sub {
	case "list", "ls", "view", "outdated", "info", "why":
		return ""
	default:
		return fmt.Sprintf("the package manager command %q is not read-only", sub)
	}
}

func dockerReadOnly(args []string) string {
	switch sub := firstWord(args); sub {
	case "ps", "images", "inspect", "logs", "version":
		return ""
	default:
		return fmt.Sprintf("docker %s is not read-only", sub)
	}
}

func cargoReadOnly(args []string) string {
	switch sub := firstWord(args); sub {
	case "tree", "metadata", "version":
		return ""
	default:
		return fmt.Sprintf("cargo %s is not read-only", sub)
	}
}
