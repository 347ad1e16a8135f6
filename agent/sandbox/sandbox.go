package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ExecArg is the hidden subcommand of the re-exec: a tool's process is
// started as `retrace __sandbox-exec PLAN -- PROGRAM ARGS…`, which
// restricts itself as PLAN says and then becomes PROGRAM.
const ExecArg = "__sandbox-exec"

// ErrUnavailable is wrapped by the error every tool process gets when
// the kernel cannot sandbox it; no process then starts.
var ErrUnavailable = errors.New("the sandbox is not available")

// UnavailableError says why the kernel cannot sandbox and how to opt out.
type UnavailableError struct {
	// Reason is what the kernel lacks, e.g. "Landlock is not enabled".
	Reason string
}

// Error says what is missing and the two ways to run without a sandbox.
func (e *UnavailableError) Error() string {
	return "retrace runs no tool process without a sandbox, and this kernel cannot provide one: " + e.Reason +
		". To run tools unsandboxed anyway, set `sandbox: {mode: off}` in your own retrace.yaml or pass --no-sandbox; the session records that choice."
}

// Unwrap returns ErrUnavailable.
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// Options configure New.
type Options struct {
	// Policy is the trusted, layered sandbox section.
	Policy Policy
	// Workspace is the absolute, symlink-free workspace directory.
	Workspace string
	// Home is the home directory whose secret paths are denied and whose
	// "~/" the writable extras start from; "" means os.UserHomeDir. When
	// given, it is also the HOME of every process (a throwaway home in
	// tests and evals, so that a command's "~" never reaches the real one).
	Home string
	// Probe replaces the kernel check, which returns the Landlock ABI
	// version; nil asks the kernel. Tests simulate a kernel without
	// Landlock with it.
	Probe func() (int, error)
}

// Sandbox is a session's sandbox: the plan every tool process of the
// session is restricted by, and the session's private temporary
// directory. A nil *Sandbox runs processes unsandboxed; harness.Build
// always makes one, ModeOff included, so that the choice is recorded.
type Sandbox struct {
	mode      Mode
	abi       int
	network   bool
	dir       string // private: holds the plan and the temporary directory
	temp      string
	planFile  string
	writable  []string
	workspace string
	home      string
	limits    string
	setHome   bool
	protected []string // read-only inside the workspace
	mounts    bool     // the process gets a mount namespace of its own
	cleanup   []func()
	// unavailable is set when the kernel cannot sandbox: every Start fails.
	unavailable *UnavailableError
	// spawnMu serialises the requests to the session's spawner, sp, which
	// is started by the first Start and stopped by Close.
	spawnMu sync.Mutex
	sp      *spawner
}

// MinABI is the oldest Landlock ABI the sandbox runs on: version 3 is the
// first to restrict truncation, without which `: > ~/.bashrc` would pass.
const MinABI = 3

// New makes the session's sandbox. A kernel that cannot sandbox is not an
// error here: the Sandbox then refuses every process (Start returns an
// *UnavailableError) and Info records why, so that the session starts,
// records the refusal and tells the model. Only a policy that is not valid
// or a private directory that cannot be made are errors.
func New(opts Options) (*Sandbox, error) {
	if err := opts.Policy.Check(); err != nil {
		return nil, err
	}
	s := &Sandbox{mode: opts.Policy.EffectiveMode(), network: opts.Policy.Network, workspace: opts.Workspace, home: opts.Home, setHome: opts.Home != ""}
	if s.mode == ModeOff {
		return s, nil
	}
	if s.home == "" {
		s.home, _ = os.UserHomeDir()
	}
	probe := opts.Probe
	if probe == nil {
		probe = landlockABI
	}
	abi, err := probe()
	switch {
	case err != nil:
		s.unavailable = &UnavailableError{Reason: err.Error()}
		return s, nil
	case abi < MinABI:
		s.unavailable = &UnavailableError{Reason: fmt.Sprintf("the kernel's Landlock ABI is version %d, and the sandbox needs version %d or later (Linux 6.2)", abi, MinABI)}
		return s, nil
	}
	s.abi = abi
	if abi < netABI && !s.network && !canUnshareNet() {
		s.unavailable = &UnavailableError{Reason: fmt.Sprintf("the kernel's Landlock ABI is version %d, which cannot restrict the network (version %d can), and retrace, not running as root, cannot give the process a network namespace instead; allow the network with `sandbox: {network: true}` in your own retrace.yaml", abi, netABI)}
		return s, nil
	}
	if err := s.prepare(opts.Policy); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// prepare makes the private directory and writes the plan into it.
func (s *Sandbox) prepare(p Policy) error {
	dir, err := os.MkdirTemp("", "retrace-sandbox-")
	if err != nil {
		return fmt.Errorf("sandbox: make the private directory: %w", err)
	}
	s.dir = dir
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(dir) })
	s.temp = filepath.Join(dir, "tmp")
	if err := os.Mkdir(s.temp, 0o700); err != nil {
		return fmt.Errorf("sandbox: make the private temporary directory: %w", err)
	}
	pl, err := s.makePlan(p)
	if err != nil {
		return err
	}
	s.mounts = pl.ReadOnlyRoot
	b, err := json.Marshal(pl)
	if err != nil {
		return fmt.Errorf("sandbox: encode the plan: %w", err)
	}
	s.planFile = filepath.Join(dir, "plan.json")
	if err := os.WriteFile(s.planFile, b, 0o600); err != nil {
		return fmt.Errorf("sandbox: write the plan: %w", err)
	}
	return nil
}

// makePlan computes what the process may do. The read rules are the
// costly part: Landlock only grants, so the read rules cover every path
// except the secret ones by enumerating the siblings along each path that
// leads to a secret (readRules).
func (s *Sandbox) makePlan(p Policy) (*plan, error) {
	pl := &plan{ABI: s.abi, Network: p.Network}
	if s.mode == ModeWorkspaceWrite && s.workspace != "" {
		s.writable = append(s.writable, s.workspace)
	}
	s.writable = append(s.writable, s.temp)
	for _, w := range p.Writable {
		if rest, ok := strings.CutPrefix(w, "~/"); ok {
			w = filepath.Join(s.home, rest)
		}
		s.writable = append(s.writable, filepath.Clean(w))
	}
	pl.WriteDirs = slices.Clone(s.writable)
	if canMount() {
		pl.ReadOnlyRoot = true
		if s.mode == ModeWorkspaceWrite && s.workspace != "" {
			for _, rel := range protectedIn {
				s.protected = append(s.protected, filepath.Join(s.workspace, rel))
			}
			pl.Protect = slices.Clone(s.protected)
		}
	}
	pl.WriteFiles = deviceFiles
	for _, hp := range p.AllowNetwork {
		n, _ := port(hp) // checked by Policy.Check
		pl.Ports = append(pl.Ports, n)
	}
	denied := s.secretPaths()
	pl.ReadDirs, pl.ListDirs, pl.ReadFiles = readRules(denied)
	lim, desc := newLimits()
	pl.Cgroups, pl.NProc = lim.procs, lim.nproc
	s.limits = desc
	s.cleanup = append(s.cleanup, lim.remove)
	return pl, nil
}

// deviceFiles are the device files every process may write.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"}

// secretPaths lists the existing secret paths outside the workspace, with
// the .env* files of the home directory and of the workspace's ancestors.
func (s *Sandbox) secretPaths() []string {
	var out []string
	add := func(p string) {
		p = filepath.Clean(p)
		if s.workspace != "" && within(p, s.workspace) {
			return
		}
		if _, err := os.Lstat(p); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	homes := []string{s.home}
	if real, err := os.UserHomeDir(); err == nil && real != s.home {
		homes = append(homes, real)
	}
	dirs := slices.Clone(homes)
	if s.workspace != "" {
		for d := filepath.Dir(s.workspace); ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	for _, h := range homes {
		if h == "" {
			continue
		}
		for _, rel := range SecretPaths {
			add(filepath.Join(h, rel))
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(d, ".env*"))
		for _, m := range matches {
			add(m)
		}
	}
	return out
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Command is a process to start with Start.
type Command struct {
	// Argv is the program's absolute path followed by its arguments.
	Argv []string
	// Env is the environment; nil means this process's.
	Env []string
	// Dir is the working directory; "" means this process's.
	Dir string
	// Stdin, Stdout and Stderr are the standard files; nil is /dev/null.
	Stdin, Stdout, Stderr *os.File
	// Pgid is the process group the process joins (procgroup.Group.ID);
	// 0 makes a new group led by the process.
	Pgid int
}

// Start starts c sandboxed and returns it; the caller waits for it.
//
// The session's first process starts the session's spawner through the
// re-exec of this binary (ExecArg), which restricts itself as the plan
// says and then executes SpawnerArg; from then on a process costs a
// request on the spawner's socket and a fork and exec there, and inherits
// the spawner's restrictions. The process is this process's child all the
// same (CLONE_PARENT), so Wait and Kill work as for any child. TMPDIR is
// the session's private temporary directory, and HOME the home given to
// New. With the sandbox off (or a nil Sandbox) c starts directly; where
// the kernel cannot sandbox it returns an *UnavailableError and nothing
// starts. No error ever starts c unsandboxed.
func (s *Sandbox) Start(c Command) (*os.Process, error) {
	if len(c.Argv) == 0 || !filepath.IsAbs(c.Argv[0]) {
		return nil, fmt.Errorf("sandbox: %q is not an absolute program path", c.Argv)
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	if s != nil && s.setHome {
		env = setEnv(env, "HOME", s.home)
	}
	if s == nil || s.mode == ModeOff {
		return startDirect(c, env)
	}
	if s.unavailable != nil {
		return nil, s.unavailable
	}
	return s.spawn(c, setEnv(env, "TMPDIR", s.temp))
}

// startDirect starts c unsandboxed, for the sandbox's mode off.
func startDirect(c Command, env []string) (*os.Process, error) {
	files := []*os.File{c.Stdin, c.Stdout, c.Stderr}
	for i, f := range files {
		if f == nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			files[i] = null
		}
	}
	return os.StartProcess(c.Argv[0], c.Argv, &os.ProcAttr{Dir: c.Dir, Env: env, Files: files, Sys: groupAttr(c.Pgid)})
}

// setEnv returns env (nil meaning this process's environment) with key
// set to value.
func setEnv(env []string, key, value string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, key+"=")
	}), key+"="+value)
}

// Writable lists what a sandboxed process may write, for messages.
func (s *Sandbox) Writable() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.writable)
}

// Mode returns the sandbox's mode.
func (s *Sandbox) Mode() Mode {
	if s == nil {
		return ModeOff
	}
	return s.mode
}

// Unavailable returns why the kernel cannot sandbox, nil when it can (or
// the sandbox is off).
func (s *Sandbox) Unavailable() error {
	if s == nil || s.unavailable == nil {
		return nil
	}
	return s.unavailable
}

// Info describes the sandbox for session_start.
type Info struct {
	// Mode is the mode, or "unavailable" when the kernel cannot sandbox.
	Mode string
	// ABI is the kernel's Landlock ABI version; 0 when not probed.
	ABI int
	// Network is true when processes may use the network freely.
	Network bool
	// Limits says how the process count is bounded.
	Limits string
	// Reason says why the sandbox is unavailable.
	Reason string
}

// Info describes the sandbox.
func (s *Sandbox) Info() Info {
	if s == nil {
		return Info{Mode: string(ModeOff)}
	}
	in := Info{Mode: string(s.mode), ABI: s.abi, Network: s.network || s.mode == ModeOff, Limits: s.limits}
	if s.unavailable != nil {
		in.Mode, in.Reason = "unavailable", s.unavailable.Reason
	}
	return in
}

// Close stops the session's spawner and removes the private directory, the temporary directory with it,
// and the session's cgroups. It is safe to call more than once.
func (s *Sandbox) Close() {
	if s == nil {
		return
	}
	s.spawnMu.Lock()
	s.sp.stop()
	s.sp = nil
	s.spawnMu.Unlock()
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// denialLine matches the error texts of a refused file operation: EACCES,
// EPERM, EROFS and EXDEV (Landlock's answer to a link across its rules).
var denialLine = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|invalid cross-device link|failure writing output`)

// pathWord finds the path-like words of an error line: quoted text, or a
// word holding a slash or starting with a dot or a tilde.
var pathWord = regexp.MustCompile("['‘`\"]([^'’`\"]+)['’`\"]|([~./][^\\s:'\"]*|[^\\s:'\"]*/[^\\s:'\"]*)")

// Refused reports whether a process's output shows the sandbox refusing
// an access, and the path it refused:
//   - a line with a refused-access error (EACCES, EPERM, EROFS, EXDEV)
//     naming a path outside what is writable;
//   - else, when such a line names no path (curl -sS: "Failure writing
//     output to destination"), one of the command's words that is a path
//     outside it (words);
//   - else, for a failed command (the caller gives writes only then), one
//     of its known write targets outside it (writes, from the shell
//     analysis), which also covers a program that printed nothing.
//
// "~" is the home directory and relative paths start at the workspace.
// This reads what the programs printed, so a program that hides its error
// and writes no known target, or names the path differently, is not seen
// (docs/sandbox.md).
func (s *Sandbox) Refused(output string, writes, words []string) (string, bool) {
	if s == nil || s.mode == ModeOff || s.unavailable != nil {
		return "", false
	}
	denial := false
	for _, line := range strings.Split(output, "\n") {
		if !denialLine.MatchString(line) {
			continue
		}
		denial = true
		for _, m := range pathWord.FindAllStringSubmatch(line, -1) {
			w := m[1]
			if w == "" {
				w = m[2]
			}
			if p, ok := s.outside(w); ok {
				return p, true
			}
		}
	}
	var candidates []string
	if denial {
		candidates = words
	}
	for _, w := range append(candidates, writes...) {
		if p, ok := s.outside(w); ok {
			return p, true
		}
	}
	return "", false
}

// outside resolves a path as a command names it and reports whether it
// lies outside everything writable.
func (s *Sandbox) outside(w string) (string, bool) {
	w = strings.TrimRight(strings.TrimSpace(w), ".,;")
	w = strings.Trim(w, "'\"")
	if w == "" || w == "." || w == ".." || strings.ContainsAny(w, "*?[$`") || strings.Contains(w, "://") || strings.HasPrefix(w, "-") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(w, "~"); ok {
		if rest != "" && rest[0] != '/' {
			return "", false // ~user
		}
		w = s.home + rest
	}
	if !filepath.IsAbs(w) {
		if s.workspace == "" {
			return "", false
		}
		w = filepath.Join(s.workspace, w)
	}
	w = filepath.Clean(w)
	for _, d := range s.protected {
		if within(w, d) {
			return w, true
		}
	}
	for _, d := range append(s.Writable(), deviceFiles...) {
		if within(w, d) {
			return "", false
		}
	}
	return w, true
}

// Explain is the text the model gets after a refused access: that the
// sandbox refused it, and what is writable.
func (s *Sandbox) Explain(path string) string {
	return fmt.Sprintf("[sandbox] The sandbox refused access to %s: in this session (sandbox mode %s) a command may write only %s, "+
		"and may not read credentials (~/.ssh, ~/.aws, ~/.config/gcloud, ~/.netrc, ~/.npmrc, .env files outside the workspace). "+
		"Do not retry it another way; if the change is needed, ask the user to make it.", path, s.Mode(), strings.Join(s.Writable(), ", "))
}
