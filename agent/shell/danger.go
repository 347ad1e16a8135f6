package shell

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The dangerous classes. Danger.Name is always one of these; they are
// stable because they appear in trajectories. A command in any of them is
// hard-blocked: denied in every permission mode, bypass included.
const (
	// DangerRecursiveDelete is recursive deletion of /, of a system tree
	// (/etc, /usr, /var/lib…), of a home directory (~, $HOME, /home/x,
	// /root), of the working directory or its parents (., .., *), or of a
	// path rooted at a variable that may be unset (rm -rf "$DIR/").
	DangerRecursiveDelete = "rm_root"
	// DangerFindDelete is deletion through find (-delete, -exec rm) over
	// such a tree, or over the working directory without any filter.
	DangerFindDelete = "find_delete"
	// DangerDiskFormat is formatting, wiping or repartitioning a disk
	// (mkfs, mkswap, wipefs, blkdiscard, fdisk/sfdisk/parted on a device).
	DangerDiskFormat = "mkfs"
	// DangerDiskWrite is dd writing to a device (dd of=/dev/sda).
	DangerDiskWrite = "dd_device"
	// DangerDeviceWrite is any other write to a disk device: a
	// redirection (> /dev/sda), shred, cp or tee onto it.
	DangerDeviceWrite = "device_write"
	// DangerForkBomb is a function that calls itself in parallel.
	DangerForkBomb = "fork_bomb"
	// DangerKillAll is killing every process (kill -9 -1, kill 1,
	// killall5, pkill with a pattern that matches everything).
	DangerKillAll = "kill_all"
	// DangerSetuid is making a file setuid or setgid (chmod u+s, 4755,
	// install -m 4755) or granting it capabilities (setcap).
	DangerSetuid = "setuid"
	// DangerDownloadExec is running code fetched from the network: by a
	// pipe (curl … | sh), a substitution (bash -c "$(curl …)", bash
	// <(curl …)) or a file (curl -o x.sh …; sh x.sh, or chmod +x and ./x).
	DangerDownloadExec = "download_exec"
	// DangerReverseShell is a shell wired to a network connection (bash -i
	// >& /dev/tcp/…, nc -e, socat exec:, a pipeline between a shell and nc,
	// a python/perl socket one-liner that spawns a shell).
	DangerReverseShell = "reverse_shell"
	// DangerCredentialExfil is sending a credential file (~/.ssh keys,
	// ~/.aws/credentials, .env, *.pem…) over the network: curl -d @file,
	// -F, -T, wget --post-file, scp/rsync to a remote, nc < file, or a
	// pipeline from a reader of such a file into a network program.
	DangerCredentialExfil = "credential_exfil"
	// DangerPersistence is installing code that runs later: crontab,
	// writing shell start-up files (~/.bashrc, ~/.profile…), systemd units,
	// /etc/cron*, authorized_keys, sudoers and similar.
	DangerPersistence = "persistence"
	// DangerGitConfigExec is git configuration that makes git run a
	// program later (core.hooksPath, core.fsmonitor, core.sshCommand,
	// core.pager, core.editor, alias.x=!…, diff.external, filters,
	// textconv…), set with git config or git -c.
	DangerGitConfigExec = "git_config_exec"
	// DangerChmodSystem is chmod, chown or chgrp -R of a system or home
	// tree, or of / or a top-level system directory itself.
	DangerChmodSystem = "chmod_root"
	// DangerMoveSystem is moving a system or home tree away (mv /usr …).
	DangerMoveSystem = "mv_system"
	// DangerShutdown is stopping or rebooting the machine.
	DangerShutdown = "shutdown"
	// DangerUnparseable is a command that does not parse: bash would still
	// run the lines before the error, so nothing of it is run.
	DangerUnparseable = "unparseable"
)

// DangerClasses lists every Danger.Name, for documentation and tests.
var DangerClasses = []string{
	DangerRecursiveDelete, DangerFindDelete, DangerDiskFormat, DangerDiskWrite,
	DangerDeviceWrite, DangerForkBomb, DangerKillAll, DangerSetuid,
	DangerDownloadExec, DangerReverseShell, DangerCredentialExfil,
	DangerPersistence, DangerGitConfigExec, DangerChmodSystem,
	DangerMoveSystem, DangerShutdown, DangerUnparseable,
}

// wrappers are commands that run another command given as their arguments.
// The value is the set of their options that take a separate value, so the
// wrapped command can be found after them.
var wrappers = map[string]map[string]bool{
	"sudo":     {"-u": true, "-g": true, "-p": true, "-C": true, "-h": true, "-U": true, "-D": true, "-R": true, "-T": true, "-r": true, "-t": true},
	"doas":     {"-u": true, "-C": true},
	"pkexec":   {"--user": true},
	"env":      {"-u": true, "-C": true, "-S": true, "--unset": true, "--chdir": true, "--split-string": true},
	"command":  {},
	"builtin":  {},
	"exec":     {"-a": true},
	"nice":     {"-n": true, "--adjustment": true},
	"nohup":    {},
	"setsid":   {},
	"time":     {"-f": true, "-o": true, "--format": true, "--output": true},
	"timeout":  {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
	"stdbuf":   {"-i": true, "-o": true, "-e": true},
	"ionice":   {"-c": true, "-n": true, "-p": true, "-P": true, "-u": true},
	"chrt":     {},
	"xargs":    {"-I": true, "-n": true, "-L": true, "-P": true, "-d": true, "-E": true, "-s": true, "-a": true, "--max-args": true, "--max-procs": true, "--delimiter": true, "--arg-file": true, "--replace": true},
	"strace":   {"-o": true, "-e": true, "-p": true, "-s": true},
	"ltrace":   {"-o": true, "-e": true, "-p": true},
	"runuser":  {"-u": true, "-g": true, "-G": true},
	"unbuffer": {},
	"chroot":   {"--userspec": true, "--groups": true},
	"flock":    {"-w": true, "-E": true, "--timeout": true, "-c": true},
	"taskset":  {},
	"busybox":  {},
	"toybox":   {},
}

// innerStart returns the index in args where the command that the wrapper
// name runs begins, or -1.
func innerStart(name string, args []string) int {
	valued, ok := wrappers[name]
	if !ok {
		return -1
	}
	i := 0
scan:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			i++
			break scan
		case (name == "env" || name == "sudo" || name == "doas") && isEnvAssignment(a):
			i++ // NAME=value
		case name == "command" && (a == "-v" || a == "-V"):
			return -1 // command -v only prints where a command is
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if valued[a] {
				i++
			}
			i++
		case name == "timeout" || name == "chroot" || name == "flock" || name == "taskset" || (name == "chrt" && i == 0):
			i++ // the duration, directory, lock file or mask comes first
			break scan
		default:
			break scan
		}
	}
	if i >= len(args) {
		return -1
	}
	return i
}

// isEnvAssignment reports a NAME=value word, which env, sudo and doas
// put into the environment of the command they run.
func isEnvAssignment(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	return ok && name != "" && isIdentifier(name)
}

// Inner returns the command that a wrapper such as sudo, env, nice,
// timeout, nohup, command, exec, xargs or find -exec runs, and true; or false when c is
// not a wrapper or the wrapped command cannot be found. Rules and dangerous
// patterns look through wrappers so "sudo rm -rf /" is still "rm -rf /".
func (c Command) Inner() (Command, bool) {
	if path.Base(c.Name) == "find" {
		// find … -exec cmd args ; runs cmd for each file.
		for j, a := range c.Args {
			if (a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir") && j+1 < len(c.Args) {
				end := j + 1
				for end < len(c.Args) && c.Args[end] != ";" && c.Args[end] != "+" {
					end++
				}
				if end == j+1 {
					return Command{}, false
				}
				return Command{Name: c.Args[j+1], Args: c.Args[j+2 : end], Dynamic: c.Dynamic, Text: c.Text}, true
			}
		}
		return Command{}, false
	}
	i := innerStart(path.Base(c.Name), c.Args)
	if i < 0 {
		return Command{}, false
	}
	inner := Command{Name: c.Args[i], Args: c.Args[i+1:], Dynamic: c.Dynamic, Text: c.Text}
	if strings.HasPrefix(inner.Name, "$") || strings.HasPrefix(inner.Name, "`") {
		inner.Name = ""
	}
	return inner, true
}

// unwrapFields returns the command and every command it runs through a
// wrapper or find -exec, outermost first.
func unwrapFields(fs []field) [][]field {
	out := [][]field{fs}
	for i := 0; i < len(out) && len(out) < 8; i++ {
		cur := out[i]
		if len(cur) == 0 || cur[0].dynamic {
			continue
		}
		name := path.Base(cur[0].value)
		if name == "find" {
			for j := 1; j < len(cur); j++ {
				switch cur[j].value {
				case "-exec", "-execdir", "-ok", "-okdir":
					end := j + 1
					for end < len(cur) && cur[end].value != ";" && cur[end].value != "+" {
						end++
					}
					if end > j+1 {
						out = append(out, cur[j+1:end])
					}
					j = end
				}
			}
			continue
		}
		if _, ok := wrappers[name]; !ok {
			continue
		}
		args := make([]string, len(cur)-1)
		for k, f := range cur[1:] {
			args[k] = f.value
			if f.dynamic {
				args[k] = f.source
			}
		}
		if k := innerStart(name, args); k >= 0 {
			out = append(out, cur[k+1:])
		}
	}
	return out
}

func values(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.value
	}
	return out
}

// systemDirs are top-level directories whose loss breaks the machine.
var systemDirs = map[string]bool{
	"/etc": true, "/usr": true, "/bin": true, "/sbin": true, "/boot": true,
	"/var": true, "/lib": true, "/lib32": true, "/lib64": true, "/libx32": true,
	"/opt": true, "/dev": true, "/proc": true, "/sys": true, "/root": true,
	"/home": true, "/srv": true, "/System": true, "/Library": true,
	"/Applications": true, "/Users": true, "/snap": true, "/nix": true,
}

// systemParents are directories whose direct children are system trees as
// well (/usr/lib, /etc/ssh, /var/lib) or home directories (/home/x).
var systemParents = map[string]bool{
	"/": true, "/etc": true, "/usr": true, "/bin": true, "/sbin": true, "/boot": true,
	"/var": true, "/lib": true, "/lib32": true, "/lib64": true, "/libx32": true,
	"/dev": true, "/proc": true, "/sys": true, "/System": true, "/Library": true,
	"/home": true, "/Users": true, "/usr/local": true, "/nix": true,
}

// normPath cleans a path for the checks: ${HOME} and $HOME already expand
// to "~"; "~user" names another home.
func normPath(p string) string {
	if p == "" {
		return ""
	}
	n := path.Clean(p)
	if strings.HasPrefix(n, "~") && !strings.HasPrefix(p, "~") {
		return "./" + n // ./~ is a file named ~, not the home directory
	}
	return n
}

// criticalTree says what p is when a recursive change of it breaks the
// machine or loses a home directory, or "". p may be a glob: then it is
// critical when what it can match is.
func criticalTree(p string) string {
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		dir := path.Dir(p[:i] + "x")
		if dir == "." && !strings.HasPrefix(p, "./") && !strings.HasPrefix(p, ".") {
			return ""
		}
		dir = normPath(dir)
		if w := criticalTree(dir); w != "" {
			return w
		}
		if systemParents[dir] || dir == "~" {
			return "every entry of " + dir
		}
		return ""
	}
	n := normPath(p)
	switch {
	case n == "/":
		return "the root directory"
	case n == "~" || (strings.HasPrefix(n, "~") && !strings.Contains(n, "/")):
		return "a home directory"
	case homeTrees[n]:
		return "the home directory's " + strings.TrimPrefix(n, "~/")
	case n == "/root" || (path.Dir(n) == "/home" || path.Dir(n) == "/Users") && n != "/home" && n != "/Users":
		return "the home directory " + n
	case systemDirs[n]:
		return "the system directory " + n
	case systemParents[path.Dir(n)] && path.Dir(n) != "/":
		return "the system directory " + n
	}
	return ""
}

// homeTrees are directories of a home directory whose loss loses the
// user's configuration, keys or installed programs: what the XDG
// variables usually name, and the key stores.
var homeTrees = map[string]bool{
	"~/.config": true, "~/.local": true, "~/.local/share": true, "~/.local/state": true,
	"~/.local/bin": true, "~/.ssh": true, "~/.gnupg": true,
}

// workspaceTree reports the working directory, its parents and a bare *,
// which rm -rf must never take either.
func workspaceTree(p string) bool {
	n := normPath(p)
	if n == "." || n == "*" || n == "./*" {
		return true
	}
	for _, seg := range strings.Split(n, "/") {
		if seg != ".." {
			return false
		}
	}
	return true
}

// isBlockDevice reports raw disk devices, whose overwrite destroys a disk.
func isBlockDevice(p string) bool {
	for _, prefix := range []string{"/dev/sd", "/dev/nvme", "/dev/disk", "/dev/hd", "/dev/vd", "/dev/xvd", "/dev/mmcblk", "/dev/md", "/dev/mapper/", "/dev/dm-", "/dev/loop", "/dev/rdisk"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// recursive reports -r, -R or --recursive among the options before "--".
func recursive(args []field) bool {
	for _, f := range args {
		a := f.value
		if a == "--" {
			return false
		}
		if a == "--recursive" || shortFlag(a, 'r') || shortFlag(a, 'R') {
			return true
		}
	}
	return false
}

// operandFields returns the arguments that are not options.
func operandFields(args []field) []field {
	var out []field
	dashdash := false
	for _, f := range args {
		switch {
		case dashdash || f.dynamic:
			out = append(out, f)
		case f.value == "--":
			dashdash = true
		case strings.HasPrefix(f.value, "-") && len(f.value) > 1:
		default:
			out = append(out, f)
		}
	}
	return out
}

// treeOf returns what a path operand names for the tree checks, also for
// a dynamic operand whose variables may be empty ("$DIR/" is then "/").
func treeOf(f field, workspace bool) (what string, ok bool) {
	check := func(p string) string {
		if w := criticalTree(p); w != "" {
			return w
		}
		if workspace && workspaceTree(p) {
			return "the working directory or a parent of it"
		}
		return ""
	}
	if !f.dynamic {
		w := check(f.value)
		return w, w != ""
	}
	if f.hasEmpty && f.empty != "" {
		if w := check(f.empty); w != "" {
			return fmt.Sprintf("%s when the variables in %s are unset or empty", w, f.source), true
		}
	}
	if f.hasHome && f.home != "" {
		if w := check(f.home); w != "" {
			return fmt.Sprintf("%s, derived from the home directory by %s", w, f.source), true
		}
	}
	return "", false
}

// checkDanger looks for the hard-blocked classes in one simple command
// and the commands it wraps.
func (an *analyzer) checkDanger(fs []field, depth int) {
	for _, av := range unwrapFields(fs) {
		if len(av) == 0 {
			continue
		}
		if av[0].dynamic || av[0].glob {
			an.dynamicNameDanger(av, depth)
			continue
		}
		if class, reason := commandDanger(an.joinCwd(av)); class != "" {
			an.dangerous(class, reason)
			return
		}
	}
}

// joinCwd joins the relative path operands of the tree-changing programs
// to the directory of an earlier static cd: cd / && rm -rf usr is
// rm -rf /usr.
func (an *analyzer) joinCwd(av []field) []field {
	if an.cwd == "" {
		return av
	}
	switch path.Base(av[0].value) {
	case "rm", "chmod", "chown", "chgrp", "mv", "find", "shred":
	default:
		return av
	}
	out := append([]field{}, av...)
	for i := 1; i < len(out); i++ {
		f := &out[i]
		if f.dynamic || strings.HasPrefix(f.value, "-") || path.IsAbs(f.value) || strings.HasPrefix(f.value, "~") ||
			(path.Base(av[0].value) == "chmod" && looksLikeMode(f.value)) {
			continue
		}
		f.value = path.Join(an.cwd, f.value)
		if strings.HasSuffix(out[i].source, "*") && !strings.HasSuffix(f.value, "*") {
			f.value += "/*"
		}
	}
	return out
}

// dynamicCandidates are the programs a dynamic command name is tried as:
// if the arguments would be dangerous for one of them, the command is.
// Programs that are dangerous whatever their arguments (mkfs, crontab) are
// left out, or every dynamic name would be.
var dynamicCandidates = []string{"rm", "chmod", "chown", "mv", "dd", "kill", "pkill", "shred",
	"git", "socat", "curl", "scp", "tee", "sh"}

func (an *analyzer) dynamicNameDanger(av []field, depth int) {
	for _, cand := range dynamicCandidates {
		try := append([]field{{value: cand}}, av[1:]...)
		class, reason := commandDanger(try)
		if class == "" && cand == "sh" && depth < maxNesting {
			for _, s := range nestedScripts(try) {
				if s.dynamic {
					continue
				}
				sub := analyzer{vars: an.vars}
				sub.script(s.value, depth+1)
				if sub.danger != nil && sub.danger.Name != DangerUnparseable {
					class, reason = sub.danger.Name, sub.danger.Reason
				}
			}
		}
		if class != "" {
			an.dangerous(class, fmt.Sprintf("has a program name (%s) only known at run time, and as %s the command %s", av[0].source, cand, reason))
			return
		}
	}
}

// commandDanger checks one command with a static name.
func commandDanger(av []field) (class, reason string) {
	name := path.Base(av[0].value)
	args := av[1:]
	switch {
	case name == "rm" && recursive(args):
		for _, t := range operandFields(args) {
			if w, ok := treeOf(t, true); ok {
				return DangerRecursiveDelete, fmt.Sprintf("recursively deletes %s (rm -r %s)", w, t.source)
			}
		}
	case name == "find":
		return findDanger(args)
	case strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "mkswap" || name == "wipefs" || name == "blkdiscard":
		// An image file (mkfs.ext4 disk.img) is fine; a device, or an
		// operand only known at run time, is not.
		for _, t := range operandFields(args) {
			if t.dynamic || t.glob || strings.HasPrefix(t.value, "/dev/") {
				return DangerDiskFormat, fmt.Sprintf("formats or wipes a disk (%s %s)", name, t.source)
			}
		}
	case name == "fdisk" || name == "sfdisk" || name == "parted" || name == "sgdisk" || name == "gdisk" || name == "cfdisk":
		listOnly := false
		dev := false
		for _, a := range args {
			switch a.value {
			case "-l", "--list", "-p", "print", "--print", "-s":
				listOnly = true
			}
			if isBlockDevice(a.value) || a.dynamic {
				dev = true
			}
		}
		if dev && !listOnly {
			return DangerDiskFormat, fmt.Sprintf("repartitions a disk (%s)", name)
		}
	case name == "dd":
		for _, a := range args {
			if dev, ok := strings.CutPrefix(a.value, "of=/dev/"); ok && !harmlessDevice(dev) {
				return DangerDiskWrite, fmt.Sprintf("writes directly to the device /dev/%s", dev)
			}
		}
	case name == "shred" || name == "cp" || name == "tee" || name == "install":
		for _, t := range operandFields(args) {
			if !t.dynamic && isBlockDevice(t.value) {
				return DangerDeviceWrite, fmt.Sprintf("overwrites the disk device %s", t.value)
			}
		}
		if name == "install" {
			return installDanger(args)
		}
	case name == "chmod" || name == "chown" || name == "chgrp":
		if name == "chmod" {
			if mode, ok := chmodMode(args); ok && setsID(mode) {
				return DangerSetuid, fmt.Sprintf("makes a file setuid or setgid (chmod %s), which lets it run as its owner", mode)
			}
		}
		rec := recursive(args)
		for _, t := range operandFields(args) {
			if t.dynamic {
				if w, ok := treeOf(t, false); ok && rec {
					return DangerChmodSystem, fmt.Sprintf("recursively changes the owner or mode of %s", w)
				}
				continue
			}
			n := normPath(t.value)
			if w := criticalTree(t.value); w != "" && (rec || n == "/" || systemDirs[n] || n == "~") {
				return DangerChmodSystem, fmt.Sprintf("changes the owner or mode of %s (%s %s)", w, name, t.value)
			}
		}
	case name == "setcap":
		return DangerSetuid, "grants a program capabilities (setcap), which lets it act as root"
	case name == "mv":
		ops := operandFields(args)
		target := false
		for _, a := range args {
			if a.value == "-t" || strings.HasPrefix(a.value, "--target-directory") {
				target = true
			}
		}
		if !target && len(ops) > 0 {
			ops = ops[:len(ops)-1]
		}
		for _, t := range ops {
			if w, ok := treeOf(t, false); ok {
				return DangerMoveSystem, fmt.Sprintf("moves %s away (mv %s)", w, t.source)
			}
		}
	case name == "kill":
		if killsAll(args) {
			return DangerKillAll, "kills every process (kill -1 or kill 1)"
		}
	case name == "killall5":
		return DangerKillAll, "kills every process (killall5)"
	case name == "pkill" || name == "killall":
		if p, ok := killPattern(name, args); ok && matchesEverything(p) {
			return DangerKillAll, fmt.Sprintf("kills every process (%s %s matches every name)", name, p)
		}
	case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff":
		return DangerShutdown, fmt.Sprintf("stops the machine (%s)", name)
	case name == "systemctl" || name == "init" || name == "telinit":
		for _, a := range operandFields(args) {
			switch a.value {
			case "poweroff", "reboot", "halt", "kexec", "0", "6":
				return DangerShutdown, fmt.Sprintf("stops the machine (%s %s)", name, a.value)
			case "enable", "link", "edit", "preset", "add-wants", "add-requires":
				if name == "systemctl" {
					return DangerPersistence, fmt.Sprintf("installs a service that starts later on its own (systemctl %s)", a.value)
				}
			}
		}
	case name == "launchctl":
		for _, a := range operandFields(args) {
			if a.value == "load" || a.value == "bootstrap" || a.value == "submit" || a.value == "enable" {
				return DangerPersistence, fmt.Sprintf("installs a job that starts later on its own (launchctl %s)", a.value)
			}
		}
	case name == "crontab":
		for _, a := range args {
			if a.value == "-l" || a.value == "-r" || a.value == "-h" || a.value == "--help" {
				return "", ""
			}
		}
		return DangerPersistence, "installs a crontab, code that runs later on a schedule"
	case name == "git":
		return gitDanger(args)
	case name == "nc" || name == "ncat" || name == "netcat":
		for _, a := range args {
			v := a.value
			if v == "--exec" || v == "--sh-exec" || v == "--lua-exec" || strings.HasPrefix(v, "--exec=") || strings.HasPrefix(v, "--sh-exec=") ||
				shortFlag(v, 'e') || shortFlag(v, 'c') {
				return DangerReverseShell, fmt.Sprintf("connects a program to the network (%s %s), a remote shell", name, v)
			}
		}
	case name == "socat":
		for _, a := range args {
			l := strings.ToLower(a.value)
			if strings.HasPrefix(l, "exec:") || strings.HasPrefix(l, "system:") || strings.Contains(l, ",exec:") {
				return DangerReverseShell, "connects a program to the network (socat exec:), a remote shell"
			}
		}
	case interpreters[name] && name != "eval" && name != "source" && name != ".":
		for i := 1; i < len(av); i++ {
			v := av[i].value
			if (v == "-c" || v == "-e" || v == "-r" || v == "-E" || v == "--eval") && i+1 < len(av) && socketShell(av[i+1].value) {
				return DangerReverseShell, fmt.Sprintf("opens a network socket and runs a shell through it (%s %s …)", name, v)
			}
		}
	case name == "curl" || name == "wget" || name == "scp" || name == "rsync" || name == "sftp" || name == "gh" || name == "aws" || name == "gsutil":
		return exfilDanger(name, args)
	case name == "at" || name == "batch":
		for _, a := range args {
			switch a.value {
			case "-l", "-r", "-d", "-c", "-h", "--help", "-V":
				return "", ""
			}
		}
		return DangerPersistence, fmt.Sprintf("schedules a job that runs later (%s)", name)
	}
	return "", ""
}

func harmlessDevice(dev string) bool {
	switch dev {
	case "null", "zero", "stdout", "stderr", "tty":
		return true
	}
	return strings.HasPrefix(dev, "fd/")
}

// findDanger reports find deleting a critical tree, or the whole working
// directory without a filter.
func findDanger(args []field) (string, string) {
	var starts []field
	i := findOptions(args)
	for ; i < len(args); i++ {
		v := args[i].value
		if !args[i].dynamic && (strings.HasPrefix(v, "-") || v == "(" || v == "!") {
			break
		}
		starts = append(starts, args[i])
	}
	deletes, filtered := false, false
	for j := i; j < len(args); j++ {
		switch args[j].value {
		case "-delete":
			deletes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			if j+1 < len(args) {
				switch path.Base(args[j+1].value) {
				case "rm", "shred", "unlink", "rmdir":
					deletes = true
				}
			}
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
			"-type", "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size",
			"-empty", "-user", "-group", "-perm", "-links", "-inum", "-samefile", "-lname", "-ilname":
			filtered = true
		}
	}
	if !deletes {
		return "", ""
	}
	if len(starts) == 0 {
		starts = []field{{value: "."}}
	}
	for _, s := range starts {
		if w, ok := treeOf(s, false); ok {
			return DangerFindDelete, fmt.Sprintf("deletes files all over %s (find %s … -delete)", w, s.source)
		}
		if s.dynamic && s.hasEmpty && s.empty == "" && !filtered {
			return DangerFindDelete, fmt.Sprintf("deletes everything under the working directory when %s is empty (find … -delete)", s.source)
		}
		if !s.dynamic && workspaceTree(s.value) && !filtered {
			return DangerFindDelete, fmt.Sprintf("deletes everything under %s (find %s -delete without a filter)", s.value, s.value)
		}
	}
	return "", ""
}

// chmodMode returns chmod's mode operand.
func chmodMode(args []field) (string, bool) {
	for _, a := range args {
		v := a.value
		if strings.HasPrefix(v, "--reference") {
			return "", false
		}
		if strings.HasPrefix(v, "-") && !looksLikeMode(v) {
			continue
		}
		return v, !a.dynamic
	}
	return "", false
}

func looksLikeMode(v string) bool {
	v = strings.TrimPrefix(v, "-")
	return v != "" && strings.Trim(v, "ugoarwxXst+-=,01234567") == "" && strings.ContainsAny(v, "rwxXst01234567")
}

// setsID reports a chmod mode that adds the setuid or setgid bit.
func setsID(mode string) bool {
	if mode == "" {
		return false
	}
	if strings.Trim(mode, "01234567") == "" {
		if len(mode) >= 4 {
			d := mode[len(mode)-4]
			return (d-'0')&6 != 0
		}
		return false
	}
	for _, clause := range strings.Split(mode, ",") {
		i := strings.IndexAny(clause, "+=")
		if i >= 0 && strings.ContainsRune(clause[i:], 's') {
			// 's' after + or = (and before any -) adds the bit.
			rest := clause[i:]
			if j := strings.IndexByte(rest, '-'); j >= 0 {
				rest = rest[:j]
			}
			if strings.ContainsRune(rest, 's') {
				return true
			}
		}
	}
	return false
}

func installDanger(args []field) (string, string) {
	for i, a := range args {
		mode := ""
		switch {
		case (a.value == "-m" || a.value == "--mode") && i+1 < len(args):
			mode = args[i+1].value
		case strings.HasPrefix(a.value, "--mode="):
			mode = strings.TrimPrefix(a.value, "--mode=")
		case strings.HasPrefix(a.value, "-m") && len(a.value) > 2:
			mode = a.value[2:]
		}
		if setsID(mode) {
			return DangerSetuid, fmt.Sprintf("installs a setuid or setgid file (install -m %s)", mode)
		}
	}
	return "", ""
}

// killsAll reports kill of pid -1 (every process) with any signal but 0,
// or of pid 1 (init, which takes the whole system or container with it)
// with a signal that ends it.
func killsAll(args []field) bool {
	signal, sig := false, "TERM"
	var pids []string
	for i := 0; i < len(args); i++ {
		v := args[i].value
		switch {
		case v == "--":
			for _, p := range args[i+1:] {
				pids = append(pids, p.value)
			}
			i = len(args)
		case (v == "-s" || v == "-n" || v == "--signal") && i+1 < len(args):
			i++
			signal, sig = true, args[i].value
		case v == "-l" || v == "-L" || v == "--list":
			return false
		case strings.HasPrefix(v, "-") && !signal:
			signal, sig = true, strings.TrimPrefix(v, "-")
		default:
			pids = append(pids, v)
		}
	}
	sig = strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	for _, p := range pids {
		switch {
		case p == "-1" && sig != "0":
			return true
		case p == "1":
			switch sig {
			case "0", "HUP", "1", "USR1", "10", "USR2", "12", "CONT", "18", "WINCH", "28", "CHLD", "17", "URG", "23":
			default:
				return true
			}
		}
	}
	return false
}

// killPattern returns the process pattern of pkill, or of killall -r.
func killPattern(name string, args []field) (string, bool) {
	regex := name == "pkill"
	var ops []string
	for i := 0; i < len(args); i++ {
		v := args[i].value
		switch {
		case args[i].dynamic:
			return "", false
		case v == "-r" || v == "--regexp":
			regex = true
		case v == "-u" || v == "-U" || v == "-g" || v == "-G" || v == "-P" || v == "-s" || v == "-t" || v == "--signal" || v == "-o" || v == "-y":
			i++
		case strings.HasPrefix(v, "-") && len(v) > 1:
		default:
			ops = append(ops, v)
		}
	}
	if !regex || len(ops) == 0 {
		return "", false
	}
	return ops[0], true
}

var allNames = []string{"systemd", "init", "bash", "sshd", "x", "Xorg", "python3"}

// matchesEverything reports a process pattern that matches any name.
func matchesEverything(p string) bool {
	re, err := regexp.Compile(p)
	if err != nil {
		return false
	}
	for _, n := range allNames {
		if !re.MatchString(n) {
			return false
		}
	}
	return true
}

// socketShell reports an interpreter one-liner that opens a socket and
// runs a shell or a program through it.
func socketShell(script string) bool {
	l := strings.ToLower(script)
	sock := strings.Contains(l, "socket") || strings.Contains(l, "fsockopen") || strings.Contains(l, "tcpsocket") ||
		strings.Contains(l, "net.connect") || strings.Contains(l, "/dev/tcp")
	run := strings.Contains(l, "/bin/") || strings.Contains(l, "subprocess") || strings.Contains(l, "pty") ||
		strings.Contains(l, "exec") || strings.Contains(l, "spawn") || strings.Contains(l, "dup2") ||
		strings.Contains(l, "system") || strings.Contains(l, "popen") || strings.Contains(l, "sh -i")
	return sock && run
}

// codeKeys are git configuration keys whose value is a program git runs.
var codeKeys = map[string]bool{
	"core.hookspath": true, "core.fsmonitor": true, "core.sshcommand": true, "core.pager": true,
	"core.editor": true, "core.askpass": true, "core.gitproxy": true, "diff.external": true,
	"sequence.editor": true, "credential.helper": true, "gpg.program": true,
	"uploadpack.packobjectshook": true, "include.path": true, "web.browser": true,
	"init.templatedir": true, "core.alternaterefscommand": true, "protocol.ext.allow": true,
}

// benignPrograms are editor and pager values that only show text.
var benignPrograms = map[string]bool{
	"": true, "cat": true, "less": true, "more": true, "most": true, "vi": true, "vim": true,
	"nvim": true, "nano": true, "emacs": true, "true": true, "false": true,
}

// codeRunningConfig reports a git configuration key (and value) that makes
// git run a program.
func codeRunningConfig(key, value string) bool {
	k := strings.ToLower(key)
	parts := strings.Split(k, ".")
	last := parts[len(parts)-1]
	switch {
	case k == "core.pager" || k == "core.editor" || k == "sequence.editor" || strings.HasPrefix(k, "pager."):
		return !benignPrograms[strings.TrimSpace(value)]
	case codeKeys[k]:
		return true
	case strings.HasPrefix(k, "alias."):
		return strings.HasPrefix(strings.TrimSpace(value), "!")
	case len(parts) >= 3 && parts[0] == "diff" && (last == "textconv" || last == "command"),
		len(parts) >= 3 && parts[0] == "merge" && last == "driver",
		len(parts) >= 3 && parts[0] == "filter" && (last == "clean" || last == "smudge" || last == "process"),
		len(parts) >= 3 && parts[0] == "gpg" && last == "program",
		len(parts) >= 3 && parts[0] == "includeif" && last == "path",
		len(parts) >= 3 && parts[0] == "remote" && (last == "uploadpack" || last == "receivepack" || last == "proxy"),
		len(parts) >= 3 && (parts[0] == "browser" || parts[0] == "man" || parts[0] == "difftool" || parts[0] == "mergetool") && (last == "cmd" || last == "path"),
		len(parts) >= 3 && parts[0] == "credential" && last == "helper":
		return true
	}
	return false
}

// gitDanger finds code-running configuration in git -c and git config.
func gitDanger(args []field) (string, string) {
	i := 0
	for ; i < len(args); i++ {
		v := args[i].value
		switch {
		case v == "-c" && i+1 < len(args):
			i++
			key, value, _ := strings.Cut(args[i].value, "=")
			if codeRunningConfig(key, value) {
				return DangerGitConfigExec, fmt.Sprintf("makes git run a program through its configuration (git -c %s)", key)
			}
			continue
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--config-env":
			if v == "--config-env" && i+1 < len(args) {
				key, _, _ := strings.Cut(args[i+1].value, "=")
				if codeRunningConfig(key, "x") {
					return DangerGitConfigExec, fmt.Sprintf("makes git run a program through its configuration (git --config-env %s)", key)
				}
			}
			i++
			continue
		case strings.HasPrefix(v, "--config-env="):
			key, _, _ := strings.Cut(strings.TrimPrefix(v, "--config-env="), "=")
			if codeRunningConfig(key, "x") {
				return DangerGitConfigExec, fmt.Sprintf("makes git run a program through its configuration (git --config-env %s)", key)
			}
			continue
		case strings.HasPrefix(v, "-"):
			continue
		}
		break
	}
	if i < len(args) {
		sub := args[i].value
		switch sub {
		case "clone", "fetch", "pull", "push", "ls-remote", "archive", "send-pack", "fetch-pack":
			for _, a := range args[i+1:] {
				opt, _, _ := strings.Cut(a.value, "=")
				if opt == "--upload-pack" || opt == "--receive-pack" || opt == "--exec" || (sub == "clone" && opt == "-u") {
					return DangerGitConfigExec, fmt.Sprintf("makes git run a program (git %s %s), like remote.<name>.uploadpack", sub, opt)
				}
			}
		}
	}
	if i < len(args) && (args[i].value == "init" || args[i].value == "clone") {
		for _, a := range args[i+1:] {
			if a.value == "--template" || strings.HasPrefix(a.value, "--template=") {
				return DangerGitConfigExec, fmt.Sprintf("installs git hooks from a template directory (git %s --template)", args[i].value)
			}
		}
	}
	if i >= len(args) || args[i].value != "config" {
		return "", ""
	}
	rest := args[i+1:]
	var ops []string
	for j := 0; j < len(rest); j++ {
		v := rest[j].value
		switch {
		case v == "-f" || v == "--file" || v == "--blob" || v == "--type" || v == "--default" || v == "--comment":
			j++
		case v == "--get" || v == "--get-all" || v == "--get-regexp" || v == "--list" || v == "-l" ||
			v == "--unset" || v == "--unset-all" || v == "--remove-section" || v == "--rename-section" ||
			v == "--get-urlmatch" || v == "--get-color" || v == "--get-colorbool" || v == "-e" || v == "--edit":
			return "", ""
		case strings.HasPrefix(v, "-"):
		default:
			ops = append(ops, v)
		}
	}
	if len(ops) > 0 && ops[0] == "set" {
		ops = ops[1:]
	} else if len(ops) > 0 && (ops[0] == "get" || ops[0] == "list" || ops[0] == "unset" || ops[0] == "rename-section" || ops[0] == "remove-section" || ops[0] == "edit") {
		return "", ""
	}
	if len(ops) >= 2 && codeRunningConfig(ops[0], ops[1]) {
		return DangerGitConfigExec, fmt.Sprintf("makes git run a program later (git config %s)", ops[0])
	}
	return "", ""
}

// isSecretPath reports files that hold credentials.
func isSecretPath(p string) bool {
	if p == "" {
		return false
	}
	n := path.Clean(p)
	base := path.Base(n)
	switch base {
	case ".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".git-credentials",
		".pgpass", ".npmrc", ".pypirc", "credentials", "shadow", "gshadow", ".ssh", ".aws", ".gnupg",
		"credentials.json", "service-account.json", ".vault-token", ".boto", "kubeconfig":
		return true
	}
	if strings.HasPrefix(base, ".env.") || strings.HasPrefix(base, "id_") && !strings.HasSuffix(base, ".pub") {
		return true
	}
	switch path.Ext(base) {
	case ".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx":
		return true
	}
	for _, dir := range []string{".ssh/", ".aws/", ".gnupg/", ".kube/", ".docker/config.json", ".config/gcloud/", ".config/gh/"} {
		if strings.Contains(n+"/", "/"+dir) || strings.HasPrefix(n, dir) {
			if strings.HasSuffix(n, ".pub") || strings.HasSuffix(n, "known_hosts") {
				return false
			}
			return true
		}
	}
	return false
}

// exfilDanger finds a credential file uploaded by curl, wget, scp, rsync
// or gh gist.
func exfilDanger(name string, args []field) (string, string) {
	reason := func(f string) (string, string) {
		return DangerCredentialExfil, fmt.Sprintf("sends the credential file %s over the network (%s)", f, name)
	}
	switch name {
	case "curl":
		for i := 0; i < len(args); i++ {
			v := args[i].value
			val := ""
			switch {
			case (v == "-d" || v == "--data" || v == "--data-binary" || v == "--data-urlencode" || v == "--json" ||
				v == "-F" || v == "--form" || v == "-T" || v == "--upload-file" || v == "--form-string") && i+1 < len(args):
				val = args[i+1].value
				if v == "-T" || v == "--upload-file" {
					val = "@" + val
				}
				i++
			case strings.HasPrefix(v, "-d") || strings.HasPrefix(v, "-F"):
				val = v[2:]
			case strings.HasPrefix(v, "-T"):
				val = "@" + v[2:]
			case strings.HasPrefix(v, "--data") || strings.HasPrefix(v, "--form=") || strings.HasPrefix(v, "--upload-file="):
				_, val, _ = strings.Cut(v, "=")
				if strings.HasPrefix(v, "--upload-file=") {
					val = "@" + val
				}
			}
			if f, ok := uploadedFile(val); ok && isSecretPath(f) {
				return reason(f)
			}
		}
	case "wget":
		for i := 0; i < len(args); i++ {
			v := args[i].value
			f := ""
			switch {
			case (v == "--post-file" || v == "--body-file") && i+1 < len(args):
				f = args[i+1].value
				i++
			case strings.HasPrefix(v, "--post-file=") || strings.HasPrefix(v, "--body-file="):
				_, f, _ = strings.Cut(v, "=")
			}
			if isSecretPath(f) {
				return reason(f)
			}
		}
	case "scp", "rsync", "sftp":
		ops := operandFields(args)
		remote, secret := false, ""
		for _, o := range ops {
			if isRemote(o.value) {
				remote = true
			} else if !o.dynamic && isSecretPath(o.value) {
				secret = o.value
			}
		}
		if remote && secret != "" {
			return reason(secret)
		}
	case "aws", "gsutil":
		// aws s3 cp|sync|mv SRC DST, gsutil cp SRC DST.
		ops := operandFields(args)
		for _, o := range ops {
			if !o.dynamic && isSecretPath(o.value) {
				for _, d := range ops {
					if strings.Contains(d.value, "://") {
						return reason(o.value)
					}
				}
			}
		}
	case "gh":
		if len(args) >= 2 && args[0].value == "gist" && args[1].value == "create" {
			for _, o := range operandFields(args[2:]) {
				if isSecretPath(o.value) {
					return reason(o.value)
				}
			}
		}
	}
	return "", ""
}

// uploadedFile returns the file of a curl data or form value: @file or
// name=@file or name=<file.
func uploadedFile(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if f, ok := strings.CutPrefix(v, "@"); ok {
		return f, true
	}
	if i := strings.IndexAny(v, "@<"); i > 0 && strings.IndexByte(v[:i], '=') >= 0 {
		f := v[i+1:]
		if j := strings.IndexByte(f, ';'); j >= 0 {
			f = f[:j]
		}
		return f, true
	}
	return "", false
}

// isRemote reports an scp or rsync operand on another host (host:path,
// user@host:path, rsync://…).
func isRemote(v string) bool {
	if strings.Contains(v, "://") {
		return true
	}
	i := strings.IndexByte(v, ':')
	if i <= 0 {
		return false
	}
	return !strings.Contains(v[:i], "/")
}

// persistenceHome are files and directories under a home directory whose
// contents run later on their own.
var persistenceHome = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
	".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".xinitrc", ".xprofile", ".xsession",
	".pam_environment", ".gitconfig", ".config/git/config", ".ssh/authorized_keys", ".ssh/authorized_keys2", ".ssh/rc",
	".ssh/config", ".config/fish/", ".config/autostart/", ".config/systemd/", ".config/environment.d/",
	"Library/LaunchAgents/", ".local/share/systemd/", ".bashrc.d/", ".vimrc", ".inputrc",
}

// persistenceSystem are system paths whose contents run later.
var persistenceSystem = []string{
	"/etc/profile", "/etc/profile.d/", "/etc/bash.bashrc", "/etc/bashrc", "/etc/zsh/", "/etc/zshrc",
	"/etc/environment", "/etc/cron", "/var/spool/cron/", "/etc/systemd/", "/lib/systemd/",
	"/usr/lib/systemd/", "/etc/init.d/", "/etc/init/", "/etc/rc.local", "/etc/rc.d/", "/etc/ld.so.preload",
	"/etc/sudoers", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/update-motd.d/", "/etc/xdg/autostart/",
	"/Library/LaunchAgents/", "/Library/LaunchDaemons/", "/etc/ssh/", "/etc/pam.d/", "/etc/security/",
	"/etc/gitconfig", "/etc/anacrontab", "/etc/at.allow", "/var/spool/at/",
}

// persistencePath reports a path whose contents run later.
func persistencePath(p string) bool {
	n := normPath(p)
	if n == "" {
		return false
	}
	rel := ""
	switch {
	case n == "~" || strings.HasPrefix(n, "~"):
		if i := strings.IndexByte(n, '/'); i >= 0 {
			rel = n[i+1:]
		}
	case strings.HasPrefix(n, "/root/"):
		rel = strings.TrimPrefix(n, "/root/")
	case strings.HasPrefix(n, "/home/") || strings.HasPrefix(n, "/Users/"):
		parts := strings.SplitN(n, "/", 4)
		if len(parts) == 4 {
			rel = parts[3]
		}
	}
	if rel != "" {
		for _, h := range persistenceHome {
			if rel == strings.TrimSuffix(h, "/") || (strings.HasSuffix(h, "/") && strings.HasPrefix(rel, h)) {
				return true
			}
		}
		return false
	}
	for _, s := range persistenceSystem {
		if n == strings.TrimSuffix(s, "/") || strings.HasPrefix(n, s) {
			return true
		}
	}
	return false
}

// checkDynamicTarget checks a write target only known at run time by the
// values it takes when its variables are empty ("$D/.bashrc" is
// /.bashrc) and when its home expansions name what they usually name
// ("${HOME%/}/.bashrc" is ~/.bashrc).
func (an *analyzer) checkDynamicTarget(f field, by string) {
	if f.hasEmpty && f.empty != "" {
		an.checkWriteTarget(f.empty, by)
	}
	if f.hasHome && f.home != "" {
		an.checkWriteTarget(f.home, by)
	}
}

// checkWriteTarget checks a static file a command writes for the device
// and persistence classes.
func (an *analyzer) checkWriteTarget(target, by string) {
	switch {
	case isBlockDevice(target):
		an.dangerous(DangerDeviceWrite, fmt.Sprintf("overwrites the disk device %s (%s)", target, by))
	case persistencePath(target):
		an.dangerous(DangerPersistence, fmt.Sprintf("writes %s, which runs code later on its own (%s)", target, by))
	case gitHookPath(target):
		an.dangerous(DangerPersistence, fmt.Sprintf("writes %s, a git hook: code that git runs on its own at the next commit, checkout or push (%s)", target, by))
	case gitConfigPath(target):
		an.dangerous(DangerGitConfigExec, fmt.Sprintf("writes %s, git's configuration, which can make git run a program (core.fsmonitor, core.hooksPath) (%s)", target, by))
	}
}

// gitHookPath reports the hooks directory of a git repository or a file
// in it: .git/hooks, x/.git/hooks/pre-commit.
func gitHookPath(p string) bool {
	n := "/" + strings.TrimPrefix(normPath(p), "./")
	return strings.HasSuffix(n, "/.git/hooks") || strings.Contains(n, "/.git/hooks/")
}

// gitConfigPath reports a repository's own configuration file.
func gitConfigPath(p string) bool {
	n := "/" + strings.TrimPrefix(normPath(p), "./")
	return strings.HasSuffix(n, "/.git/config") || strings.HasSuffix(n, "/.git/config.worktree")
}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "aria2c": true, "lwp-download": true, "http": true, "xh": true}

// networkTools talk to another host; with a shell in the same pipeline
// they make a remote shell.
var networkTools = map[string]bool{"nc": true, "ncat": true, "netcat": true, "socat": true, "telnet": true, "openssl": true}

// senders are programs that send their input or files over the network.
var senders = map[string]bool{
	"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "socat": true,
	"telnet": true, "scp": true, "rsync": true, "ssh": true, "sftp": true, "openssl": true, "ftp": true,
	"http": true, "xh": true, "gh": true, "aws": true, "gsutil": true,
}

var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true, "mksh": true, "ash": true,
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "csh": true, "tcsh": true,
	"node": true, "php": true, "eval": true, "source": true, ".": true, "lua": true, "deno": true, "bun": true,
}

var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true, "mksh": true, "ash": true, "csh": true, "tcsh": true,
}

// names returns the base names of every command under n, looking through
// wrappers; a dynamic command name is given as "$".
func (an *analyzer) names(n syntax.Node, src string) map[string]bool {
	out := map[string]bool{}
	syntax.Walk(n, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		for name := range an.callNames(call, src) {
			out[name] = true
		}
		return true
	})
	return out
}

// stmtNames is names for one side of a pipe, cached: in a | b | c each
// side is asked for again by the enclosing pipe.
func (an *analyzer) stmtNames(st *syntax.Stmt, src string) map[string]bool {
	if got, ok := an.stmtNameCache[st]; ok {
		return got
	}
	var out map[string]bool
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && len(st.Redirs) == 0 {
		// Built from the two sides, so a long pipeline costs its length.
		out = map[string]bool{}
		for k := range an.stmtNames(b.X, src) {
			out[k] = true
		}
		for k := range an.stmtNames(b.Y, src) {
			out[k] = true
		}
	} else {
		out = an.names(st, src)
	}
	if an.stmtNameCache == nil {
		an.stmtNameCache = map[*syntax.Stmt]map[string]bool{}
	}
	an.stmtNameCache[st] = out
	return out
}

// callNames returns the names one call runs, looking through wrappers. It
// is cached per call: the pipeline checks ask for the same calls once per
// enclosing pipe, and a long pipeline must not cost the square of its
// length in expansions.
func (an *analyzer) callNames(call *syntax.CallExpr, src string) map[string]bool {
	if got, ok := an.nameCache[call]; ok {
		return got
	}
	out := map[string]bool{}
	fs := an.callFields(call, src)
	for _, av := range unwrapFields(fs) {
		if len(av) == 0 {
			continue
		}
		if av[0].dynamic || av[0].glob {
			out["$"] = true
		} else {
			out[path.Base(av[0].value)] = true
		}
	}
	if an.nameCache == nil {
		an.nameCache = map[*syntax.CallExpr]map[string]bool{}
	}
	an.nameCache[call] = out
	return out
}

// readsSecret reports a command under n with a credential file among its
// static operands or input redirections.
func (an *analyzer) readsSecret(n syntax.Node, src string) string {
	found := ""
	syntax.Walk(n, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, w := range n.Args[min(1, len(n.Args)):] {
				for _, f := range an.evalWord(w, src) {
					if !f.dynamic && isSecretPath(f.value) {
						found = f.value
					}
				}
			}
		case *syntax.Redirect:
			if n.Op == syntax.RdrIn && n.Word != nil {
				for _, f := range an.evalWord(n.Word, src) {
					if !f.dynamic && isSecretPath(f.value) {
						found = f.value
					}
				}
			}
		}
		return true
	})
	return found
}

func hasAny(names, set map[string]bool) bool {
	for n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// binaryChecks finds the classes that span the two sides of a pipe:
// download-and-execute (curl … | sh), remote shells (a pipeline between nc
// and a shell), credential uploads (cat ~/.ssh/id_rsa | curl -d @- …),
// and static text piped into a shell or xargs.
func (an *analyzer) binaryChecks(n *syntax.BinaryCmd, src string) {
	if n.Op != syntax.Pipe && n.Op != syntax.PipeAll {
		return
	}
	left, right := an.stmtNames(n.X, src), an.stmtNames(n.Y, src)
	switch {
	case hasAny(left, downloaders) && (hasAny(right, interpreters) || right["$"]):
		an.dangerous(DangerDownloadExec, "the pipeline downloads code from the network and runs it")
	case (hasAny(left, networkTools) || hasAny(right, networkTools)) &&
		(hasAny(left, shells) || hasAny(right, shells) || left["$"] || right["$"]):
		an.dangerous(DangerReverseShell, "the pipeline connects a shell to a network connection, a remote shell")
	case hasAny(right, senders):
		if s := an.readsSecret(n.X, src); s != "" {
			an.dangerous(DangerCredentialExfil, fmt.Sprintf("sends the credential file %s over the network through a pipe", s))
		}
	}
	an.pipedText(n, src)
}

// scriptChecks runs the checks that need the whole script: a /dev/tcp or
// /dev/udp redirection anywhere with a shell anywhere is a remote shell
// (exec 5<>/dev/tcp/h/p; sh <&5 >&5).
func (an *analyzer) scriptChecks(f *syntax.File, src string) {
	if an.netPath == "" {
		return
	}
	if all := an.names(f, src); hasAny(all, shells) || all["$"] {
		an.dangerous(DangerReverseShell, fmt.Sprintf("connects a shell to the network through %s, a remote shell", an.netPath))
	}
}

// stmtChecks checks one statement: substitutions that fetch code for an
// interpreter, /dev/tcp redirections of a shell, credential files fed to
// a network program, and files downloaded earlier being run.
func (an *analyzer) stmtChecks(st *syntax.Stmt, src string) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	fs := an.callFields(call, src)
	names := map[string]bool{}
	for _, av := range unwrapFields(fs) {
		if len(av) > 0 && !av[0].dynamic {
			names[path.Base(av[0].value)] = true
		}
	}
	if hasAny(names, interpreters) {
		for _, w := range call.Args {
			for _, part := range w.Parts {
				if an.substFetches(part, src) {
					an.dangerous(DangerDownloadExec, "the command downloads code from the network and runs it")
				}
			}
		}
		for _, r := range st.Redirs {
			if r.Word == nil {
				continue
			}
			for _, part := range r.Word.Parts {
				if an.substFetches(part, src) {
					an.dangerous(DangerDownloadExec, "the command downloads code from the network and runs it")
				}
			}
		}
	}
	if (hasAny(names, shells) || names["source"] || names["."]) && len(nestedScripts(fs)) == 0 {
		for _, r := range st.Redirs {
			body := r.Hdoc
			if r.Op == syntax.WordHdoc {
				body = r.Word
			}
			if (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc && r.Op != syntax.WordHdoc) || body == nil {
				continue
			}
			if text, ok := an.staticString(body); ok {
				sub := analyzer{vars: an.vars}
				sub.script(text, maxNesting-1)
				if sub.danger != nil && sub.danger.Name != DangerUnparseable {
					an.dangerous(sub.danger.Name, "runs a script given on its input that "+sub.danger.Reason)
				}
			}
		}
	}
	for _, r := range st.Redirs {
		if r.Word == nil {
			continue
		}
		t := an.evalWord(r.Word, src)[0]
		if t.dynamic {
			continue
		}
		if isNetworkPath(t.value) && hasAny(names, interpreters) {
			an.dangerous(DangerReverseShell, fmt.Sprintf("connects a shell to the network through %s, a remote shell", t.value))
		}
		if r.Op == syntax.RdrIn && isSecretPath(t.value) && hasAny(names, senders) {
			an.dangerous(DangerCredentialExfil, fmt.Sprintf("sends the credential file %s over the network", t.value))
		}
		if r.Op == syntax.RdrIn && hasAny(names, interpreters) && an.downloaded(t.value) {
			an.dangerous(DangerDownloadExec, fmt.Sprintf("runs %s, a file downloaded earlier in the command", t.value))
		}
		if (r.Op == syntax.RdrOut || r.Op == syntax.ClbOut || r.Op == syntax.AppOut) && (r.N == nil || r.N.Value == "1") && hasAny(names, downloaders) {
			an.downloads = append(an.downloads, t.value)
		}
	}
	if hasAny(names, senders) {
		for _, w := range call.Args {
			syntax.Walk(w, func(n syntax.Node) bool {
				if cs, ok := n.(*syntax.CmdSubst); ok {
					if s := an.readsSecret(cs, src); s != "" {
						an.dangerous(DangerCredentialExfil, fmt.Sprintf("sends the credential file %s over the network", s))
					}
				}
				return true
			})
		}
	}
	an.runsDownload(fs)
}

// substFetches reports a command or process substitution (possibly inside
// double quotes) that runs a downloader.
func (an *analyzer) substFetches(part syntax.WordPart, src string) bool {
	switch p := part.(type) {
	case *syntax.CmdSubst, *syntax.ProcSubst:
		return hasAny(an.names(p, src), downloaders)
	case *syntax.DblQuoted:
		for _, dp := range p.Parts {
			if an.substFetches(dp, src) {
				return true
			}
		}
	}
	return false
}

// trackDownloads records the files a downloader writes (curl -o/-O,
// wget's default name, -O, -P), for the download-then-run check, and
// lists every file it writes in Writes: the document and also its logs,
// header dumps, cookie jars and traces (curl -D ~/.bashrc writes a start-up
// file as surely as curl -o). A dynamic output makes the writes unknown,
// and so do a configuration file or command (curl -K, wget -e), which can
// name any output, and names the server chooses (curl -J, wget -r).
func (an *analyzer) trackDownloads(fs []field) {
	for _, av := range unwrapFields(fs) {
		if len(av) == 0 || av[0].dynamic {
			continue
		}
		name := path.Base(av[0].value)
		if !downloaders[name] {
			continue
		}
		dl := parseDownload(name, av[1:])
		if dl.unknown {
			an.writesUnknown = true
			an.writesFiles = true
		}
		for _, o := range dl.documents {
			if o.dynamic {
				an.downloads = append(an.downloads, o.source)
			} else {
				an.downloads = append(an.downloads, o.value)
			}
		}
		for _, o := range append(dl.documents, dl.others...) {
			if o.value != "-" || o.dynamic {
				an.writeField(o, o.value, name)
			}
		}
	}
}

// download is what one curl or wget command writes.
type download struct {
	// documents are the files the fetched content lands in.
	documents []field
	// others are logs, header dumps, cookie jars and traces.
	others []field
	// unknown: it may write files whose names the command does not hold.
	unknown bool
}

// downloadOptions says, for one downloader, which short options take a
// value and which options name files it writes.
type downloadOptions struct {
	valued               string   // short options with a value
	docShort, otherShort string   // short options whose value is a written file
	docLong, otherLong   []string // long options whose value is a written file
	dirShort             string   // the directory option for remote names
	dirLong              []string
	unknownShort         string // options that make the outputs unknowable
	unknownLong          []string
	remoteShort          string // options that name the file after the URL
	remoteLong           []string
	valuedLong           []string // other long options that take a separate value
	remoteByDefault      bool
	pairedShort          string // short options followed by one more letter (wget -nv)
}

var downloadSpecs = map[string]*downloadOptions{
	"curl": {
		valued: "AbcCdDeEFHKmoPQrtTuUwxXyYz", docShort: "o", otherShort: "Dc",
		docLong:   []string{"--output"},
		otherLong: []string{"--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"},
		dirLong:   []string{"--output-dir"}, unknownShort: "KJ", unknownLong: []string{"--config", "--remote-header-name"},
		remoteShort: "O", remoteLong: []string{"--remote-name", "--remote-name-all"},
		valuedLong: []string{"--user-agent", "--cookie", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--json", "--form",
			"--form-string", "--header", "--max-time", "--connect-timeout", "--proxy", "--request", "--user", "--referer", "--range",
			"--upload-file", "--cert", "--key", "--cacert", "--write-out", "--retry", "--resolve", "--connect-to", "--url", "--limit-rate"},
	},
	"wget": {
		valued: "oaOPiBtTwQeUlADIXR", docShort: "O", otherShort: "oa", pairedShort: "n",
		docLong:   []string{"--output-document"},
		otherLong: []string{"--output-file", "--append-output", "--save-cookies", "--rejected-log", "--warc-file", "--hsts-file"},
		dirShort:  "P", dirLong: []string{"--directory-prefix"},
		unknownShort: "erpmx", unknownLong: []string{"--execute", "--config", "--recursive", "--mirror", "--page-requisites",
			"--content-disposition", "--trust-server-names", "--force-directories", "--input-file"},
		remoteByDefault: true,
		valuedLong: []string{"--user-agent", "--header", "--tries", "--timeout", "--wait", "--quota", "--level", "--accept", "--reject",
			"--domains", "--user", "--password", "--post-data", "--post-file", "--body-data", "--body-file", "--method", "--load-cookies",
			"--base", "--ca-certificate", "--certificate", "--private-key"},
	},
}

// parseDownload reads a downloader's arguments, options clustered (curl
// -sSLo f) or not, long options with = or a separate value.
func parseDownload(name string, args []field) download {
	var dl download
	spec := downloadSpecs[name]
	if spec == nil {
		// A downloader whose options the analysis does not read.
		dl.unknown = true
		return dl
	}
	var urls []string
	remote, dir := spec.remoteByDefault, ""
	explicitDoc := false
	take := func(kind byte, val field) {
		switch kind {
		case 'd':
			dl.documents = append(dl.documents, val)
			explicitDoc = true
		case 'o':
			dl.others = append(dl.others, val)
		case 'D':
			dir = val.value
			if val.dynamic {
				dl.unknown = true
			}
		}
	}
	dashdash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case a.dynamic:
			// An option only known at run time may be an output option.
			if !strings.Contains(a.source, "://") {
				dl.unknown = true
			}
		case dashdash || !strings.HasPrefix(v, "-") || v == "-":
			if strings.Contains(v, "://") || !strings.HasPrefix(v, "-") {
				urls = append(urls, v)
			}
		case v == "--":
			dashdash = true
		case strings.HasPrefix(v, "--"):
			opt, val, hasVal := strings.Cut(v, "=")
			kind := byte(0)
			switch {
			case slices.Contains(spec.docLong, opt):
				kind = 'd'
			case slices.Contains(spec.otherLong, opt):
				kind = 'o'
			case slices.Contains(spec.dirLong, opt):
				kind = 'D'
			case slices.Contains(spec.unknownLong, opt):
				dl.unknown = true
			case slices.Contains(spec.remoteLong, opt):
				remote = true
			}
			needsValue := kind != 0 || slices.Contains(spec.valuedLong, opt) || opt == "--config" || opt == "--execute" || opt == "--input-file"
			if !needsValue {
				continue
			}
			valField := field{value: val, source: val}
			if !hasVal {
				if i+1 >= len(args) {
					continue
				}
				i++
				valField = args[i]
			}
			if kind != 0 {
				take(kind, valField)
			}
		default:
			for j := 1; j < len(v); j++ {
				c := v[j]
				if strings.IndexByte(spec.pairedShort, c) >= 0 {
					j++ // wget -nv, -nc, -nd: two letters
					continue
				}
				if strings.IndexByte(spec.unknownShort, c) >= 0 {
					dl.unknown = true
				}
				if strings.IndexByte(spec.remoteShort, c) >= 0 {
					remote = true
				}
				if strings.IndexByte(spec.valued, c) < 0 {
					continue
				}
				valField := field{value: v[j+1:], source: v[j+1:]}
				if valField.value == "" {
					if i+1 >= len(args) {
						break
					}
					i++
					valField = args[i]
				}
				switch {
				case strings.IndexByte(spec.docShort, c) >= 0:
					take('d', valField)
				case strings.IndexByte(spec.otherShort, c) >= 0:
					take('o', valField)
				case strings.IndexByte(spec.dirShort, c) >= 0:
					take('D', valField)
				}
				break
			}
		}
	}
	if remote && !explicitDoc {
		for _, u := range urls {
			if !strings.Contains(u, "://") {
				continue
			}
			u, _, _ = strings.Cut(u, "?")
			b := path.Base(u)
			if dir != "" {
				b = path.Join(dir, b)
			}
			dl.documents = append(dl.documents, field{value: b, source: b})
		}
	} else if remote && dir != "" {
		dl.unknown = true
	}
	return dl
}

// downloaded reports a path that names a file downloaded earlier.
func (an *analyzer) downloaded(p string) bool {
	if p == "" {
		return false
	}
	for _, d := range an.downloads {
		if d == "" || d == "-" {
			continue
		}
		if path.Clean(d) == path.Clean(p) || path.Base(d) == path.Base(p) {
			return true
		}
	}
	return false
}

// runsDownload finds a file downloaded earlier being run: by an
// interpreter, as the program itself, or made executable.
func (an *analyzer) runsDownload(fs []field) {
	if len(an.downloads) == 0 {
		return
	}
	for _, av := range unwrapFields(fs) {
		if len(av) == 0 {
			continue
		}
		if av[0].dynamic {
			if an.downloaded(av[0].source) {
				an.dangerous(DangerDownloadExec, fmt.Sprintf("runs %s, a file downloaded earlier in the command", av[0].source))
				return
			}
			continue
		}
		name := av[0].value
		base := path.Base(name)
		switch {
		case strings.Contains(name, "/") && an.downloaded(name):
			an.dangerous(DangerDownloadExec, fmt.Sprintf("runs %s, a file downloaded earlier in the command", name))
			return
		case interpreters[base]:
			for _, o := range operandFields(av[1:]) {
				if (!o.dynamic && an.downloaded(o.value)) || (o.dynamic && an.downloaded(o.source)) {
					an.dangerous(DangerDownloadExec, fmt.Sprintf("runs %s, a file downloaded earlier in the command", o.source))
					return
				}
				break // only the script operand
			}
		case base == "chmod":
			if mode, ok := chmodMode(av[1:]); ok && strings.ContainsAny(mode, "x1357") {
				for _, o := range operandFields(av[1:]) {
					if o.value != mode && !o.dynamic && an.downloaded(o.value) {
						an.dangerous(DangerDownloadExec, fmt.Sprintf("makes %s, a file downloaded earlier in the command, executable to run it", o.value))
						return
					}
				}
			}
		}
	}
}

// checkForkBomb reports a function that calls itself in a pipeline or in
// the background, the shape of :(){ :|:& };:.
func (an *analyzer) checkForkBomb(fn *syntax.FuncDecl) {
	if fn.Name == nil {
		return
	}
	self, spawns := false, false
	syntax.Walk(fn.Body, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CallExpr:
			if len(m.Args) > 0 && staticLit(m.Args[0]) == fn.Name.Value {
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
		an.dangerous(DangerForkBomb, fmt.Sprintf("defines %s, a function that calls itself in parallel without end (a fork bomb)", fn.Name.Value))
	}
}

// staticLit returns a word with quotes and escapes removed, or "" when it
// is not static; quoting a function's name still calls the function.
func staticLit(w *syntax.Word) string {
	v, ok := (&analyzer{}).staticString(w)
	if !ok {
		return ""
	}
	return v
}

// findOptions returns the index after find's leading options (-H, -L, -P,
// -D debugopts, -O level), where the start points begin.
func findOptions(args []field) int {
	i := 0
	for i < len(args) {
		switch v := args[i].value; {
		case v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-O"):
			i++
		case v == "-D":
			i += 2
		default:
			return i
		}
	}
	return i
}

// pipedText looks at echo or printf of static text piped into a shell (the
// text is a script, analysed in turn) or into xargs (the text becomes the
// arguments of the command xargs runs).
func (an *analyzer) pipedText(n *syntax.BinaryCmd, src string) {
	x, ok := lastCall(n.X.Cmd)
	if !ok || len(x.Args) < 2 {
		return
	}
	xf := an.callFields(x, src)
	if xf[0].value != "echo" && xf[0].value != "printf" {
		return
	}
	var words []string
	for _, f := range xf {
		if f.dynamic {
			return
		}
		words = append(words, f.value)
	}
	text := strings.Join(words[1:], " ")
	y, ok := firstCall(n.Y)
	if !ok || len(y.Args) == 0 {
		return
	}
	var fs []field
	for _, w := range y.Args {
		fs = append(fs, an.evalWord(w, src)...)
	}
	avs := unwrapFields(fs)
	last := avs[len(avs)-1]
	if len(last) == 0 || last[0].dynamic {
		return
	}
	switch name := path.Base(last[0].value); {
	case shells[name] && len(nestedScripts(last)) == 0:
		sub := analyzer{vars: an.vars}
		sub.script(text, maxNesting-1)
		if sub.danger != nil && sub.danger.Name != DangerUnparseable {
			an.dangerous(sub.danger.Name, "runs a script given on its input that "+sub.danger.Reason)
		}
	case len(avs) > 1 && path.Base(avs[len(avs)-2][0].value) == "xargs":
		fed := append([]field{}, last...)
		for _, w := range strings.Fields(text) {
			fed = append(fed, field{value: w})
		}
		if class, reason := commandDanger(fed); class != "" {
			an.dangerous(class, "gets its arguments through xargs and "+reason)
		}
	}
}

// lastCall and firstCall return the simple command at the end or start of
// a pipeline side.
func lastCall(c syntax.Command) (*syntax.CallExpr, bool) {
	for {
		switch n := c.(type) {
		case *syntax.CallExpr:
			return n, true
		case *syntax.BinaryCmd:
			c = n.Y.Cmd
		default:
			return nil, false
		}
	}
}

func firstCall(st *syntax.Stmt) (*syntax.CallExpr, bool) {
	c := st.Cmd
	for {
		switch n := c.(type) {
		case *syntax.CallExpr:
			return n, true
		case *syntax.BinaryCmd:
			c = n.X.Cmd
		default:
			return nil, false
		}
	}
}

// callFields returns the expanded words of a call, as they were when the
// call was analysed in order, or expanded now for a call not yet seen.
func (an *analyzer) callFields(call *syntax.CallExpr, src string) []field {
	if fs, ok := an.fieldCache[call]; ok {
		return fs
	}
	var fs []field
	for _, w := range call.Args {
		fs = append(fs, an.evalWord(w, src)...)
	}
	return fs
}
