package permission

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/workspace"
	"github.com/retrace-dev/retrace/trajectory"
)

// Checker runs the permission chain and keeps the session's permission
// memory and denial counts. It is safe for concurrent use.
type Checker struct {
	mode             trajectory.PermissionMode
	allow, ask, deny []Rule
	disallowed       map[string]string // lower-case name → as configured
	protected        []protectedPath
	threshold        int
	workspace        string // absolute, clean, as given
	root             *workspace.Root
	home             string   // symlinks resolved; "" when unknown
	secretDirs       []string // sensitiveHomeDirs below home, joined once
	mu               sync.Mutex
	memory           map[string]bool
	denials          map[string]int
	readDirs         []string // resolved; reads below them need no confirmation
	fuseOff          bool     // the denial_fuse defense is not enabled
	// hooksDir is the repository's core.hooksPath, relative to the
	// workspace and cleaned, when it names a directory inside it.
	hooksDir string
}

// DisableFuse turns the denial fuse off for the session this checker
// serves, as a configuration without the denial_fuse defense asks: denials
// are still counted, but a repeated call is neither turned into a
// confirmation nor reported as tripping the fuse. Every call is still
// checked and denied as before; only the fuse's escalation is gone.
func (c *Checker) DisableFuse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fuseOff = true
}

// AllowReads lets calls read below dir without confirmation although it
// is outside the workspace. The executor registers its blob store with it:
// a truncation notice tells the model to read the spilled output there,
// and asking (headless: denying) that read would strand the model with
// half an output.
func (c *Checker) AllowReads(dir string) {
	real := filepath.Clean(dir)
	if t, err := c.root.Resolve(real); err == nil {
		real = t.Path
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDirs = append(c.readDirs, real)
}

// Home returns the home directory bash's ~ expands to, symlinks resolved;
// "" when unknown. The executor resolves the write targets it snapshots
// with it, so the snapshot covers the files the chain checked.
func (c *Checker) Home() string { return c.home }

// readable reports whether p is below a directory given to AllowReads.
func (c *Checker) readable(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.readDirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// protectedPath is a pattern, relative to the workspace, whose writes need
// confirmation even in bypass mode, with the reason shown to the model.
type protectedPath struct {
	pattern string
	reason  string
}

// builtinProtected is first-match-wins, so the most specific entries come
// first: a broader pattern placed earlier would answer with its
// weaker reason for a path a stricter entry exists for.
var builtinProtected = []protectedPath{
	{"**/.git/hooks/**", "git hooks run arbitrary code on the next git command"},
	{"**/.git/config", "git config can make git run arbitrary programs"},
	{"**/.git/**", "it is git's internal data"},
	{".retrace/**", "it is retrace's own configuration"},
	{"retrace.yaml", "it is retrace's own configuration"},
}

// New validates cfg and returns a Checker for the workspace directory. The
// error lists every bad entry at once, each as a *RuleError naming its
// field, so the user can fix the file in one go.
func New(cfg Config, dir string) (*Checker, error) {
	var errs []error
	field := func(name string, i int, err error) {
		errs = append(errs, &RuleError{Field: fmt.Sprintf("permissions.%s[%d]", name, i), Err: err})
	}
	c := &Checker{
		mode:       cfg.Mode,
		disallowed: map[string]string{},
		threshold:  cfg.FuseThreshold,
		memory:     map[string]bool{},
		denials:    map[string]int{},
	}
	if c.mode == "" {
		c.mode = trajectory.PermDefault
	}
	if !c.mode.Valid() {
		errs = append(errs, &RuleError{Field: "permissions.mode", Err: fmt.Errorf("unknown mode %q; use default, plan, accept_edits or bypass", cfg.Mode)})
	}
	if c.threshold == 0 {
		c.threshold = defaultFuseThreshold
	}
	if c.threshold < 0 {
		errs = append(errs, &RuleError{Field: "permissions.fuse_threshold", Err: fmt.Errorf("%d is negative; use a positive count or 0 for the default of %d", cfg.FuseThreshold, defaultFuseThreshold)})
	}
	for _, list := range []struct {
		name  string
		texts []string
		into  *[]Rule
	}{{"allow", cfg.Allow, &c.allow}, {"ask", cfg.Ask, &c.ask}, {"deny", cfg.Deny, &c.deny}} {
		for i, s := range list.texts {
			r, err := ParseRule(s)
			if err != nil {
				field(list.name, i, err)
				continue
			}
			*list.into = append(*list.into, r)
		}
	}
	for i, t := range cfg.DisallowedTools {
		r, err := ParseRule(t)
		if err != nil || r.Pattern != "" {
			field("disallowed_tools", i, fmt.Errorf("%q is not a tool name; write the name alone, e.g. Bash", t))
			continue
		}
		c.disallowed[r.Tool] = strings.TrimSpace(t)
	}
	c.protected = append(c.protected, builtinProtected...)
	for i, p := range cfg.ProtectedPaths {
		p = strings.TrimPrefix(strings.TrimSpace(p), "./")
		if p == "" || !doublestar.ValidatePattern(p) {
			field("protected_paths", i, fmt.Errorf("%q is not a valid doublestar pattern (e.g. deploy/** or *.lock)", p))
			continue
		}
		c.protected = append(c.protected, protectedPath{p, fmt.Sprintf("it is protected by the configured pattern %s", p)})
	}

	root, err := workspace.New(dir)
	if err != nil {
		errs = append(errs, err)
	} else {
		c.root = root
		abs, _ := filepath.Abs(dir)
		c.workspace = filepath.Clean(abs)
		home := cfg.Home
		if home == "" {
			home, _ = os.UserHomeDir() // no home: sensitive-dir checks by name only
		}
		if home != "" && filepath.IsAbs(home) {
			if t, err := root.Resolve(filepath.Clean(home)); err == nil {
				c.home = t.Path
				for _, d := range sensitiveHomeDirs {
					c.secretDirs = append(c.secretDirs, filepath.Join(c.home, d))
				}
			}
		}
		c.hooksDir = repoHooksPath(root)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// call is a request with what the chain derives from it once.
type call struct {
	req      Request
	tool     string // lower case
	bash     bool
	analysis shell.Analysis
	// readOnly is the bash read-only fast path's verdict: the analysis
	// says read-only and nothing contradicts it (no write target, no write
	// that only the run will show).
	readOnly bool
	places   []place
	// args are the command's arguments that could be paths, resolved once
	// for the secrets and protected-path checks; see argPlaces.
	args     []place
	argsDone bool
}

// argPlaces resolves the bash arguments that could be paths, once per
// call: two steps look at them, and each resolution costs a system call
// per path component.
func (c *Checker) argPlaces(cl *call) []place {
	if !cl.argsDone {
		cl.argsDone = true
		for _, arg := range c.bashArgs(cl) {
			cl.args = append(cl.args, c.locate(arg, false, true))
		}
	}
	return cl.args
}

// prepare derives what the chain looks at. analysis is the bash command's
// analysis when the caller has it already; nil means analyse here.
func (c *Checker) prepare(req Request, analysis *shell.Analysis) *call {
	cl := &call{req: req, tool: strings.ToLower(req.Tool)}
	cl.bash = cl.tool == bashTool
	for _, a := range req.Paths {
		cl.places = append(cl.places, c.locate(a.Path, a.Write, false))
	}
	if cl.bash {
		if analysis != nil {
			cl.analysis = *analysis
		} else {
			cl.analysis = shell.Analyze(req.Command)
		}
		for _, w := range cl.analysis.Writes {
			cl.places = append(cl.places, c.shellPlaces(w, true)...)
		}
		for _, r := range cl.analysis.Reads {
			cl.places = append(cl.places, c.shellPlaces(r, false)...)
		}
		cl.readOnly = cl.analysis.ReadOnly && !cl.analysis.WritesUnknown && len(cl.analysis.Writes) == 0
	}
	return cl
}

// Check runs the permission chain and returns where it ended.
// The order of the steps is the security semantics; see the package
// documentation. Check only reads the session memory and the denial counts.
func (c *Checker) Check(req Request) Decision { return c.check(req, nil) }

func (c *Checker) check(req Request, analysis *shell.Analysis) Decision {
	cl := c.prepare(req, analysis)
	d := c.chain(cl)
	if d.Behavior == Allow || !c.Fused(req) {
		return d
	}
	n := c.denialCount(req)
	if d.Behavior == Deny {
		// A fuse never turns a deny into a question: that would let a person
		// wave through what a deny rule or a safety check forbids.
		d.Reason += fmt.Sprintf(" This exact call has been denied %d times; stop retrying it.", n)
		return d
	}
	return Decision{
		Behavior: Ask,
		Source:   trajectory.SourceFuse,
		Step:     trajectory.StepFuse,
		Reason:   fmt.Sprintf("This exact operation was denied %d times. Stop retrying it: ask the user what they want, or choose another approach.", n),
	}
}

func decide(b Behavior, src trajectory.PermissionSource, step trajectory.ChainStep, reason string) Decision {
	return Decision{Behavior: b, Source: src, Step: step, Reason: reason}
}

// chain is the order of the package documentation, step by step.
func (c *Checker) chain(cl *call) Decision {
	h := cl.req.Hook
	if h != nil && h.Behavior == Deny {
		return decide(Deny, trajectory.SourceHook, trajectory.StepHook, hookReason(h, "A PreToolUse hook denied this call. Do not retry it; tell the user what you wanted to do."))
	}
	// Nothing below can release a hard stop: not a hook, not the memory of
	// an approval, not a mode or an allow rule.
	if d, ok := c.hardStops(cl); ok {
		return d
	}
	if h != nil && h.Behavior == Ask {
		return decide(Ask, trajectory.SourceHook, trajectory.StepHook, hookReason(h, "A PreToolUse hook asked for the user's confirmation of this call."))
	}
	if c.remembered(cl.req) {
		// A person approved this exact input, after every question the
		// chain could put; only the hard stops above outrank that.
		return decide(Allow, trajectory.SourceSessionMemory, trajectory.StepSessionMemory, "")
	}
	if d, ok := c.pathQuestions(cl); ok {
		// A read outside the workspace or of secrets is the person's to
		// approve, never a hook's.
		return d
	}
	if h != nil && h.Behavior == Allow {
		// A hook may skip the questions of rules and modes, never the
		// confirmation of a protected path.
		if d, ok := c.protectedPath(cl); ok {
			return d
		}
		return decide(Allow, trajectory.SourceHook, trajectory.StepHook, "")
	}
	if r, ok := c.matchAny(c.ask, cl); ok {
		d := decide(Ask, trajectory.SourceRule, trajectory.StepAskRule,
			fmt.Sprintf("The rule %s requires the user's confirmation for this call.", r.Text))
		d.Rule = r.Text
		return d
	}
	if cl.bash && cl.readOnly {
		return decide(Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck, "")
	}
	if d, ok := c.protectedPath(cl); ok {
		return d
	}
	if c.mode == trajectory.PermBypass {
		return decide(Allow, trajectory.SourceMode, trajectory.StepBypassMode, "")
	}
	if r, ok := c.matchAllowRule(cl); ok {
		d := decide(Allow, trajectory.SourceRule, trajectory.StepAllowRule, "")
		d.Rule = r.Text
		return d
	}
	if c.mode == trajectory.PermPlan && !cl.req.ReadOnly {
		return decide(Deny, trajectory.SourceMode, trajectory.StepPlanMode,
			"You are in plan mode: only read-only calls are allowed. Finish reading and present your plan; the user will leave plan mode before anything is changed.")
	}
	if cl.req.ReadOnly && !cl.bash {
		return decide(Allow, trajectory.SourceReadOnly, trajectory.StepReadOnly, "")
	}
	if c.mode == trajectory.PermAcceptEdits && c.isWorkspaceEdit(cl) {
		return decide(Allow, trajectory.SourceMode, trajectory.StepAcceptEdits, "")
	}
	why := "No rule allows this call, so the user must confirm it."
	switch {
	case cl.bash && cl.analysis.Why != "":
		why = fmt.Sprintf("The command is not read-only (%s), so the user must confirm it.", cl.analysis.Why)
	case cl.bash && cl.analysis.WritesUnknown:
		why = "The command may write files that are only known when it runs, so the user must confirm it."
	case cl.bash && len(cl.analysis.Writes) > 0:
		why = fmt.Sprintf("The command writes %s, so the user must confirm it.", strings.Join(cl.analysis.Writes, ", "))
	}
	return decide(Ask, trajectory.SourceMode, trajectory.StepDefault, why)
}

func hookReason(h *HookDecision, fallback string) string {
	if h.Reason != "" {
		return h.Reason
	}
	return fallback
}

// hardStops are the denials no hook, memory, mode or allow rule can
// overrule: deny rules, dangerous commands, disallowed tools, and the
// denials of path validation (writes outside the workspace, paths that
// cannot be resolved).
func (c *Checker) hardStops(cl *call) (Decision, bool) {
	if r, ok := c.matchAny(c.deny, cl); ok {
		d := decide(Deny, trajectory.SourceRule, trajectory.StepDenyRule,
			fmt.Sprintf("Permission denied by rule %s. Do not retry this call; tell the user what you wanted to do.", r.Text))
		d.Rule = r.Text
		return d, true
	}
	if cl.bash && cl.analysis.Danger != nil {
		return decide(Deny, trajectory.SourceSafety, trajectory.StepDangerousCommand,
			fmt.Sprintf("This command is blocked because it %s. It cannot be allowed; do not retry it in any form. If you really need it, tell the user and let them run it themselves.", strings.TrimSuffix(lowerFirst(cl.analysis.Danger.Reason), "."))), true
	}
	if cl.bash && cl.analysis.Err != nil {
		// What cannot be parsed cannot be checked, and bash still runs the
		// lines before the error: no mode may let it through.
		return decide(Deny, trajectory.SourceSafety, trajectory.StepDangerousCommand,
			fmt.Sprintf("This command cannot be parsed (%v), so it cannot be checked and is not run. Fix the quoting and send it again.", cl.analysis.Err)), true
	}
	if name, ok := c.disallowed[cl.tool]; ok {
		d := decide(Deny, trajectory.SourceRule, trajectory.StepDisallowedTool,
			fmt.Sprintf("The tool %s is disabled in this session. Do not call it again; use another tool or tell the user.", cl.req.Tool))
		d.Rule = name
		return d, true
	}
	return c.pathDenials(cl)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// fileRuleCovers reports whether a path rule of the file tool ruleTool
// also covers a path a bash command writes (write) or reads: Edit and
// Write rules cover its writes and Read rules its reads, so a deny on
// Edit(secrets/**) is not dodged by cp, nor a deny on Read(.env) by cat.
func fileRuleCovers(ruleTool string, write bool) bool {
	if write {
		return ruleTool == "edit" || ruleTool == "write"
	}
	return ruleTool == "read"
}

// matchAny finds the first rule that matches any part of the call: for
// bash, any simple command, looking through wrappers, or any path the
// command reads or writes against a file rule; for other tools, the whole
// tool or any of its paths.
func (c *Checker) matchAny(rules []Rule, cl *call) (Rule, bool) {
	for _, r := range rules {
		if !r.matchesTool(cl.tool) {
			if cl.bash && r.Pattern != "" && c.matchesPlace(r, cl, true) {
				return r, true
			}
			continue
		}
		if r.Pattern == "" {
			return r, true
		}
		if cl.bash {
			for _, cmd := range cl.analysis.Commands {
				if r.matchesCommand(cmd, true) {
					return r, true
				}
			}
			continue
		}
		if c.matchesPlace(r, cl, false) {
			return r, true
		}
	}
	return Rule{}, false
}

// matchesPlace reports whether a file rule matches one of the call's
// paths, by what the path says or by where it leads. For bash (fromShell)
// only the file tools' rules count, writes against Edit and Write rules
// and reads against Read rules.
func (c *Checker) matchesPlace(r Rule, cl *call, fromShell bool) bool {
	for _, pl := range cl.places {
		if fromShell && (!pl.shell || !fileRuleCovers(r.Tool, pl.write)) {
			continue
		}
		if r.matchesPath(pl.relOrEmpty(c), pl.abs, c.home) || (pl.real != "" && r.matchesPath(pl.rel, pl.real, c.home)) {
			return true
		}
	}
	return false
}

// relOrEmpty is the lexical path relative to the workspace, "" outside it.
func (pl place) relOrEmpty(c *Checker) string {
	if within(pl.abs, c.workspace) {
		rel, _ := filepath.Rel(c.workspace, pl.abs)
		return rel
	}
	return ""
}

// matchAllowRule finds an allow rule for the whole call: for bash, every
// simple command must be matched by some allow rule, and a command that
// could not be parsed is never allowed; for other tools, a whole-tool rule
// or a rule matching every path (by its real location).
func (c *Checker) matchAllowRule(cl *call) (Rule, bool) {
	var first Rule
	if cl.bash {
		if cl.analysis.Err != nil || len(cl.analysis.Commands) == 0 {
			return Rule{}, false
		}
		for i, cmd := range cl.analysis.Commands {
			r, ok := c.allowFor(cl.tool, func(r Rule) bool { return r.Pattern == "" || r.matchesCommand(cmd, false) })
			if !ok {
				return Rule{}, false
			}
			if i == 0 {
				first = r
			}
		}
		return first, true
	}
	if r, ok := c.allowFor(cl.tool, func(r Rule) bool { return r.Pattern == "" }); ok {
		return r, true
	}
	if len(cl.places) == 0 {
		return Rule{}, false
	}
	for i, pl := range cl.places {
		if pl.real == "" {
			return Rule{}, false
		}
		r, ok := c.allowFor(cl.tool, func(r Rule) bool { return r.matchesPath(pl.rel, pl.real, c.home) })
		if !ok {
			return Rule{}, false
		}
		if i == 0 {
			first = r
		}
	}
	return first, true
}

func (c *Checker) allowFor(tool string, match func(Rule) bool) (Rule, bool) {
	for _, r := range c.allow {
		if r.matchesTool(tool) && match(r) {
			return r, true
		}
	}
	return Rule{}, false
}

// pathDenials is the hard half of path validation: every path resolved as
// the tools will open it (package workspace), and a write that leaves the
// workspace, or whose target cannot be resolved, is denied in every mode.
func (c *Checker) pathDenials(cl *call) (Decision, bool) {
	deny := func(format string, args ...any) (Decision, bool) {
		return decide(Deny, trajectory.SourceSafety, trajectory.StepPathValidation, fmt.Sprintf(format, args...)), true
	}
	for _, pl := range cl.places {
		if !pl.write || pl.unknown {
			continue
		}
		if pl.real != "" && pl.inside() {
			if c.hooksDir != "" && (pl.rel == c.hooksDir || within(filepath.Join(c.workspace, pl.rel), filepath.Join(c.workspace, c.hooksDir))) {
				return deny("Writing %s is not allowed in any permission mode: the repository's core.hooksPath is %s, so git runs the files there as hooks, on its own, at the next commit, checkout or push. If the repository needs it, tell the user and let them do it.", pl.given, c.hooksDir)
			}
			if why := gitCodePath(pl.rel); why != "" {
				return deny("Writing %s is not allowed in any permission mode: %s. If the repository needs it, tell the user and let them do it.", pl.given, why)
			}
			if rel := pl.relOrEmpty(c); rel != "" {
				if why := gitCodePath(rel); why != "" {
					return deny("Writing %s is not allowed in any permission mode: %s. If the repository needs it, tell the user and let them do it.", pl.given, why)
				}
			}
			if info, err := os.Stat(pl.real); err == nil && workspace.HardLinked(info) {
				return deny("Writing %s is not allowed in any permission mode: it has %d hard links, so it is one file with several names, some of which may be outside the workspace, and writing it would change them all. Do not write it another way; tell the user if it must change.", pl.given, workspace.LinkCount(info))
			}
		}
		switch {
		case pl.real == "":
			return deny("The path %s cannot be resolved (for example a symlink loop). Use a plain path inside the workspace %s.", pl.given, c.workspace)
		case pl.inside():
		case isSystemPath(pl.real):
			return deny("Writing %s is not allowed in any permission mode: %s is a system directory. Write inside the workspace %s instead.", pl.given, pl.real, c.workspace)
		default:
			where := pl.real
			if pl.real != pl.abs {
				where = fmt.Sprintf("%s (that is where the path leads once symbolic links and .. are resolved)", pl.real)
			}
			return deny("Writing %s is not allowed in any permission mode: it is outside the workspace, at %s. Write inside %s instead, or ask the user to do it.", pl.given, where, c.workspace)
		}
	}
	return Decision{}, false
}

// repoHooksPath reads core.hooksPath from the workspace repository's own
// configuration (.git/config), and returns it relative to the workspace
// when it names a directory inside it: git runs the files there as hooks
// (husky sets it to .husky). It reads only the plain form
// "[core] hooksPath = dir"; anything it cannot read gives "".
func repoHooksPath(root *workspace.Root) string {
	t, err := root.Resolve(filepath.Join(root.Dir(), ".git", "config"))
	if err != nil || !t.Inside {
		return ""
	}
	data, err := root.ReadFile(t)
	if err != nil || len(data) > 1<<20 {
		return ""
	}
	section, value := "", ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.Trim(strings.Fields(strings.Trim(line, "[]") + " x")[0], "\""))
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.EqualFold(strings.TrimSpace(key), "hookspath") {
			value = strings.Trim(strings.TrimSpace(val), "\"")
		}
	}
	if value == "" || strings.HasPrefix(value, "~") {
		return ""
	}
	dir := value
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root.Dir(), dir)
	}
	ht, err := root.Resolve(dir)
	if err != nil || !ht.Inside || ht.Rel == "" || ht.Rel == "." {
		return ""
	}
	return ht.Rel
}

// gitCodePath says why a path relative to the workspace is one whose
// content git runs as code: a hook (git runs it on its own at the next
// commit, checkout or push) or the repository's configuration (which can
// set core.fsmonitor or core.hooksPath). Writing one is denied in every
// mode, as the shell analysis hard-blocks it; "" for any other path.
func gitCodePath(rel string) string {
	if ok, _ := doublestar.Match("**/.git/hooks", rel); ok {
		return "it is the git hooks directory, whose files git runs as code on its own"
	}
	if ok, _ := doublestar.Match("**/.git/hooks/**", rel); ok {
		return "it is a git hook, code that git runs on its own at the next commit, checkout or push"
	}
	if ok, _ := doublestar.Match("**/.git/{config,config.worktree}", rel); ok {
		return "it is git's configuration, which can make git run a program (core.fsmonitor, core.hooksPath)"
	}
	return ""
}

// pathQuestions is the other half of path validation: reads outside the
// workspace, reads of secrets, paths only known when a command runs, and
// commands naming secrets need a person's confirmation.
func (c *Checker) pathQuestions(cl *call) (Decision, bool) {
	ask := func(format string, args ...any) (Decision, bool) {
		return decide(Ask, trajectory.SourceSafety, trajectory.StepPathValidation, fmt.Sprintf(format, args...)), true
	}
	for _, pl := range cl.places {
		if pl.write {
			// A write target only known at run time is what WritesUnknown
			// says: the command is not read-only and no edit, and it goes
			// through the rest of the chain like any such command.
			continue
		}
		if pl.unknown {
			return ask("The command reads %s, which is only known when it runs, so the user must confirm it.", pl.given)
		}
		if harmlessRead(pl) {
			continue
		}
		switch {
		case pl.real == "":
			return ask("The path %s cannot be resolved, so the user must confirm reading it.", pl.given)
		case c.isSensitive(pl.real) || (pl.abs != pl.real && c.isSensitive(pl.abs)):
			return ask("%s may contain secrets, so the user must confirm reading it. If you do not need it, do not read it.", pl.given)
		case !pl.inside() && !c.readable(pl.real):
			return ask("%s is outside the workspace %s, so the user must confirm reading it.", pl.given, c.workspace)
		}
	}
	if cl.bash {
		for _, pl := range c.argPlaces(cl) {
			if c.isSensitive(pl.abs) || (pl.real != "" && pl.real != pl.abs && c.isSensitive(pl.real)) {
				return ask("The command names %s, which may contain secrets, so the user must confirm it. If you do not need it, leave it out.", pl.given)
			}
		}
	}
	return Decision{}, false
}

// shellPlaces resolves one path a bash command reads or writes with
// workspace.Root.ResolveShell: a plain path is one place; a glob is every
// file it matches now plus the pattern itself; a path only the run will
// show is one unknown place.
func (c *Checker) shellPlaces(word string, write bool) []place {
	if c.home == "" && (word == "~" || strings.HasPrefix(word, "~/")) {
		// Bash will expand ~ to a home directory the checker does not
		// know: the path cannot be resolved, so a write is denied and a
		// read asks, never a file of the workspace named ~.
		return []place{{given: word, abs: word, write: write, shell: true}}
	}
	self, matches, known := c.root.ResolveShell(word, c.home)
	if !known {
		return []place{{given: word, write: write, shell: true, unknown: true}}
	}
	out := make([]place, 0, 1+len(matches))
	for _, t := range append([]workspace.Target{self}, matches...) {
		out = append(out, place{given: word, abs: t.Lexical, real: t.Path, rel: t.Rel, write: write, shell: true})
	}
	return out
}

// harmlessDevices are files outside the workspace whose reads reveal
// nothing and change nothing: head -c 100 /dev/zero needs no confirmation.
var harmlessDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin"}

func harmlessRead(pl place) bool {
	for _, d := range harmlessDevices {
		if pl.abs == d || pl.real == d {
			return true
		}
	}
	return false
}

// bashArgs returns the arguments of every simple command that could be
// paths: options are dropped, --opt=value gives value, and $HOME is
// written ~ so that it can be resolved.
func (c *Checker) bashArgs(cl *call) []string {
	var out []string
	for _, cmd := range cl.analysis.Commands {
		for _, a := range cmd.Args {
			if strings.HasPrefix(a, "-") {
				_, v, ok := strings.Cut(a, "=")
				if !ok {
					continue
				}
				a = v
			}
			for _, h := range []string{`"$HOME"`, `"${HOME}"`, "$HOME", "${HOME}"} {
				if rest, ok := strings.CutPrefix(a, h); ok {
					a = "~" + rest
				}
			}
			if a != "" && !dynamicPath(a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// protectedPath is the protected-path step: writes to paths that can run
// code or change retrace itself need confirmation even in bypass mode. A
// command that is not read-only counts as writing every path it names.
func (c *Checker) protectedPath(cl *call) (Decision, bool) {
	check := func(rel, given string) (Decision, bool) {
		for _, p := range c.protected {
			if ok, _ := doublestar.Match(p.pattern, rel); ok {
				return decide(Ask, trajectory.SourceSafety, trajectory.StepProtectedPath,
					fmt.Sprintf("Changing %s needs the user's confirmation because %s.", given, p.reason)), true
			}
		}
		return Decision{}, false
	}
	for _, pl := range cl.places {
		if !pl.write || !pl.inside() {
			continue
		}
		if d, ok := check(pl.rel, pl.given); ok {
			return d, true
		}
		if rel := pl.relOrEmpty(c); rel != "" {
			if d, ok := check(rel, pl.given); ok {
				return d, true
			}
		}
	}
	if cl.bash && !cl.readOnly {
		for _, pl := range c.argPlaces(cl) {
			for _, rel := range []string{pl.rel, pl.relOrEmpty(c)} {
				if rel == "" {
					continue
				}
				if d, ok := check(rel, pl.given); ok {
					return d, true
				}
			}
		}
	}
	return Decision{}, false
}

// isWorkspaceEdit reports an edit or write by a built-in file tool, all
// inside the workspace: what accept_edits lets through. Bash never is one,
// whatever it writes, so a command whose writes are only known when it
// runs (WritesUnknown) is never auto-allowed by accept_edits.
func (c *Checker) isWorkspaceEdit(cl *call) bool {
	if cl.bash || strings.HasPrefix(cl.tool, "mcp__") || len(cl.places) == 0 {
		return false
	}
	for _, pl := range cl.places {
		if !pl.inside() {
			return false
		}
	}
	return true
}

// key identifies an operation: the tool and its exact input, so memory and
// denial counts are per input and never per tool. The input is
// canonicalised so that key order and spacing do not matter.
func key(req Request) string {
	input := []byte(req.Input)
	var v any
	if err := json.Unmarshal(input, &v); err == nil {
		if canon, err := json.Marshal(v); err == nil {
			input = canon
		}
	}
	sum := sha256.Sum256(bytes.TrimSpace(input))
	return strings.ToLower(req.Tool) + ":" + hex.EncodeToString(sum[:])
}

// Remember records that a person allowed this exact call, so the same tool
// with the same input is allowed for the rest of the session.
func (c *Checker) Remember(req Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.memory[key(req)] = true
}

func (c *Checker) remembered(req Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memory[key(req)]
}

// Denied counts one final denial of this exact call: a hard deny, or an
// ask that the user or headless mode denied. It is the single
// place every denial is reported, so the count is of denials, not of
// checks. It returns true exactly once per operation: at the denial that
// reaches the fuse threshold.
func (c *Checker) Denied(req Request) (tripped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(req)
	c.denials[k]++
	return !c.fuseOff && c.denials[k] == c.threshold
}

// Fused reports whether this exact call's fuse has tripped; never when
// the fuse is off.
func (c *Checker) Fused(req Request) bool {
	c.mu.Lock()
	off := c.fuseOff
	c.mu.Unlock()
	return !off && c.denialCount(req) >= c.threshold
}

func (c *Checker) denialCount(req Request) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.denials[key(req)]
}

// Restrictions returns the session's configured prohibitions — the deny
// rules as written and the disallowed tools as named — each sorted and
// without duplicates, for the summary the system prompt carries: a model that knows them does not spend a turn on a call that is
// bound to be denied. It describes configuration only, which is stable
// for the whole session; what a call's arguments make dangerous is judged
// per call at run time and is never listed (listing it would be endless,
// and runtime state in the system prompt would break the cache).
func (c *Checker) Restrictions() (deny, disallowed []string) {
	for _, r := range c.deny {
		deny = append(deny, r.Text)
	}
	for _, name := range c.disallowed {
		disallowed = append(disallowed, name)
	}
	slices.Sort(deny)
	slices.Sort(disallowed)
	return slices.Compact(deny), slices.Compact(disallowed)
}

// Disallowed reports whether tool is one of the session's disallowed
// tools, by the same case-insensitive name the chain denies it by. The
// loop uses it to leave the tool out of the definitions it sends; the
// chain still denies a call to it, so a model that calls it anyway (a
// hallucinated name) is refused all the same.
func (c *Checker) Disallowed(tool string) bool {
	_, ok := c.disallowed[strings.ToLower(strings.TrimSpace(tool))]
	return ok
}
