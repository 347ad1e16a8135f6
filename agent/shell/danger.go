package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrappers are commands that run another command given as their arguments.
// The value is the set of their options that take a separate value, so the
// wrapped command can be found after them.
var wrappers = map[string]map[string]bool{
	"sudo":    {"-u": true, "-g": true, "-p": true, "-C": true, "-h": true, "-U": true, "-D": true, "-R": true, "-T": true},
	"doas":    {"-u": true, "-C": true},
	"env":     {"-u": true, "-C": true, "-S": true, "--unset": true, "--chdir": true, "--split-string": true},
	"command": {},
	"builtin": {},
	"exec":    {"-a": true},
	"nice":    {"-n": true, "--adjustment": true},
	"nohup":   {},
	"time":    {"-f": true, "-o": true, "--format": true, "--output": true},
	"timeout": {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
	"stdbuf":  {"-i": true, "-o": true, "-e": true},
	"ionice":  {"-c": true, "-n": true, "-p": true, "-P": true, "-u": true},
	"xargs":   {"-I": true, "-n": true, "-L": true, "-P": true, "-d": true, "-E": true, "-s": true, "-a": true},
	"watch":   {"-n": true, "-d": true},
	"strace":  {"-o": true, "-e": true, "-p": true},
}

// Inner returns the command that a wrapper such as sudo, env, nice,
// timeout, nohup, command, exec or xargs runs, and true; or false when c is
// not a wrapper or the wrapped command cannot be found. Rules and dangerous
// patterns look through wrappers so "sudo rm -rf /" is still "rm -rf /".
func (c Command) Inner() (Command, bool) {
	name := path.Base(c.Name)
	valued, ok := wrappers[name]
	if !ok {
		return Command{}, false
	}
	args := c.Args
	i := 0
scan:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			i++
			break scan
		case name == "env" && strings.Contains(a, "=") && !strings.HasPrefix(a, "-"):
			i++ // NAME=value
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if valued[a] {
				i++
			}
			i++
		case name == "timeout":
			i++ // the duration comes before the command
			break scan
		default:
			break scan
		}
	}
	if i >= len(args) {
		return Command{}, false
	}
	inner := Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic, Text: c.Text}
	if strings.HasPrefix(inner.Name, "$") || strings.HasPrefix(inner.Name, "`") {
		inner.Name = ""
	}
	return inner, true
}

// unwrapAll returns c and every command it wraps, outermost first.
func unwrapAll(c Command) []Command {
	out := []Command{c}
	for len(out) < 8 {
		inner, ok := out[len(out)-1].Inner()
		if !ok || inner.Name == "" {
			break
		}
		out = append(out, inner)
	}
	return out
}

// systemDirs are top-level directories whose loss breaks the machine.
var systemDirs = map[string]bool{
	"/etc": true, "/usr": true, "/bin": true, "/sbin": true, "/boot": true,
	"/var": true, "/lib": true, "/lib32": true, "/lib64": true, "/libx32": true,
	"/opt": true, "/dev": true, "/proc": true, "/sys": true, "/root": true,
	"/home": true, "/srv": true, "/System": true, "/Library": true,
	"/Applications": true, "/Users": true,
}

// normTarget turns a command argument into the path it names for the
// dangerous-pattern checks: quotes dropped, ${HOME} written $HOME, trailing
// /* and / removed.
func normTarget(t string) string {
	t = strings.NewReplacer(`"`, "", `'`, "", "${HOME}", "$HOME").Replace(t)
	for strings.HasSuffix(t, "/*") {
		t = strings.TrimSuffix(t, "/*")
		if t == "" {
			return "/"
		}
	}
	if t == "" {
		return t
	}
	return path.Clean(t)
}

// isSystemTarget reports the root, the home directory and system
// directories.
func isSystemTarget(t string) bool {
	t = normTarget(t)
	return t == "/" || t == "~" || t == "$HOME" || systemDirs[t]
}

// isRmCritical adds the current and parent directory and a bare * to the
// system targets: rm -rf . or .. wipes the workspace or what holds it.
func isRmCritical(t string) bool {
	n := normTarget(t)
	return isSystemTarget(t) || n == "." || n == ".." || n == "*"
}

// isBlockDevice reports raw disk devices, whose overwrite destroys a disk.
func isBlockDevice(p string) bool {
	for _, prefix := range []string{"/dev/sd", "/dev/nvme", "/dev/disk", "/dev/hd", "/dev/vd", "/dev/xvd", "/dev/mmcblk", "/dev/md", "/dev/mapper/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// recursive reports -r, -R or --recursive among the options before "--".
func recursive(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--recursive" || shortFlag(a, 'r') || shortFlag(a, 'R') {
			return true
		}
	}
	return false
}

// operands returns the arguments that are not options.
func operands(args []string) []string {
	var out []string
	dashdash := false
	for _, a := range args {
		switch {
		case dashdash:
			out = append(out, a)
		case a == "--":
			dashdash = true
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			out = append(out, a)
		}
	}
	return out
}

// checkDanger looks for the hard-blocked patterns in one simple command and
// the commands it wraps.
func checkDanger(an *analyzer, cmd Command) {
	for _, c := range unwrapAll(cmd) {
		name := path.Base(c.Name)
		if downloaders[name] {
			an.fetches = true
		}
		switch {
		case name == "rm" && recursive(c.Args):
			for _, t := range operands(c.Args) {
				if isRmCritical(t) {
					an.dangerous("rm_root", fmt.Sprintf("rm -r of %s would delete a whole system, home or working directory", t))
					return
				}
			}
		case strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "wipefs":
			an.dangerous("mkfs", fmt.Sprintf("%s formats a disk", name))
			return
		case name == "dd":
			for _, a := range c.Args {
				if dev, ok := strings.CutPrefix(a, "of=/dev/"); ok && !harmlessTargets["/dev/"+dev] && dev != "zero" {
					an.dangerous("dd_device", fmt.Sprintf("dd writes directly to the device %s", a[3:]))
					return
				}
			}
		case (name == "chmod" || name == "chown" || name == "chgrp") && recursive(c.Args):
			for _, t := range operands(c.Args) {
				if isSystemTarget(t) {
					an.dangerous("chmod_root", fmt.Sprintf("%s -R on %s changes a whole system or home directory", name, t))
					return
				}
			}
		case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff":
			an.dangerous("shutdown", fmt.Sprintf("%s stops the machine", name))
			return
		case name == "systemctl" || name == "init" || name == "telinit":
			for _, a := range operands(c.Args) {
				switch a {
				case "poweroff", "reboot", "halt", "kexec", "0", "6":
					an.dangerous("shutdown", fmt.Sprintf("%s %s stops the machine", name, a))
					return
				}
			}
		}
	}
}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "aria2c": true}

var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true,
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true,
	"node": true, "php": true, "eval": true, "source": true, ".": true,
}

// callNames returns the base names of every command under n, looking
// through wrappers.
func callNames(n syntax.Node, src string) map[string]bool {
	names := map[string]bool{}
	syntax.Walk(n, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		c := Command{Name: word(call.Args[0], src).value}
		for _, w := range call.Args[1:] {
			c.Args = append(c.Args, word(w, src).value)
		}
		for _, u := range unwrapAll(c) {
			names[path.Base(u.Name)] = true
		}
		return true
	})
	return names
}

func hasAny(names, set map[string]bool) bool {
	for n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// checkPipelines finds download-and-execute: curl … | sh, and
// sh -c "$(curl …)" or bash <(curl …).
func checkPipelines(an *analyzer, f *syntax.File, src string) {
	const reason = "downloads code from the network and runs it"
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) &&
				hasAny(callNames(n.X, src), downloaders) && hasAny(callNames(n.Y, src), interpreters) {
				an.dangerous("download_exec", "the pipeline "+reason)
			}
		case *syntax.Stmt:
			call, ok := n.Cmd.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 || !hasAny(callNames(call, src), interpreters) {
				return true
			}
			// The interpreter's own name is in callNames too; look only
			// inside substitutions and redirections.
			for _, w := range call.Args {
				for _, part := range w.Parts {
					if substFetches(part, src) {
						an.dangerous("download_exec", "the command "+reason)
					}
				}
			}
			for _, r := range n.Redirs {
				for _, part := range r.Word.Parts {
					if substFetches(part, src) {
						an.dangerous("download_exec", "the command "+reason)
					}
				}
			}
		}
		return true
	})
}

// substFetches reports a command or process substitution (possibly inside
// double quotes) that runs a downloader.
func substFetches(part syntax.WordPart, src string) bool {
	switch p := part.(type) {
	case *syntax.CmdSubst, *syntax.ProcSubst:
		return hasAny(callNames(p, src), downloaders)
	case *syntax.DblQuoted:
		for _, dp := range p.Parts {
			if substFetches(dp, src) {
				return true
			}
		}
	}
	return false
}

// checkForkBomb finds a function that calls itself in a pipeline or in the
// background, the shape of :(){ :|:& };:.
func checkForkBomb(an *analyzer, f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		fn, ok := n.(*syntax.FuncDecl)
		if !ok || fn.Name == nil {
			return true
		}
		self, spawns := false, false
		syntax.Walk(fn.Body, func(m syntax.Node) bool {
			switch m := m.(type) {
			case *syntax.CallExpr:
				if len(m.Args) > 0 && m.Args[0].Lit() == fn.Name.Value {
					self = true
				}
			case *syntax.BinaryCmd:
				if m.Op == syntax.Pipe || m.Op == syntax.PipeAll {
					spawns = true
				}
			case *syntax.Stmt:
				if m.Background {
					spawns = true
				}
			}
			return true
		})
		if self && spawns {
			an.dangerous("fork_bomb", fmt.Sprintf("function %s calls itself recursively in parallel (a fork bomb)", fn.Name.Value))
		}
		return true
	})
}
