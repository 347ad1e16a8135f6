package permission

import (
	"fmt"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// The chain-order table: every step of the chain is a condition that can
// be switched on for a call, and every pair of steps is put against each
// other, with each kind of call both steps apply to and, unless one of the
// pair is a mode, in every mode. The expected winner is the earlier step in
// chainSteps that fires, computed from the order alone; the one place the
// order is not a plain list (a hook's allow never skips a protected path)
// is spelled out in winner.

// kind is the sort of call a scenario makes.
type kind string

const (
	kindBashWrite kind = "a bash command that is not read-only"
	kindBashRead  kind = "a read-only bash command"
	kindEdit      kind = "an edit"
	kindRead      kind = "a read"
)

var allKinds = []kind{kindBashWrite, kindBashRead, kindEdit, kindRead}

// scenario is one call with its configuration, built up by the steps.
type scenario struct {
	kind     kind
	cfg      Config
	hook     Behavior
	remember bool
	// fragments are joined with && into the bash command.
	fragments []string
	// path is the edit's or the read's file; "" is main.go.
	path string
}

func (s *scenario) toolName() string {
	switch s.kind {
	case kindEdit:
		return "Edit"
	case kindRead:
		return "Read"
	}
	return "Bash"
}

func (s *scenario) request() Request {
	p := s.path
	if p == "" {
		p = "main.go"
	}
	var r Request
	switch s.kind {
	case kindEdit:
		r = edit(p)
	case kindRead:
		r = read(p)
	case kindBashRead:
		r = bash("ls -la")
	default:
		frags := s.fragments
		if len(frags) == 0 {
			frags = []string{"go build ./..."}
		}
		r = bash(strings.Join(frags, " && "))
	}
	if s.hook != "" {
		r.Hook = &HookDecision{Behavior: s.hook}
	}
	return r
}

// step is one step of the chain as a condition on a scenario.
type step struct {
	name string
	// kinds are the calls the step can apply to.
	kinds []kind
	// mode is set for the steps that are a permission mode.
	mode trajectory.PermissionMode
	// apply switches the step on; it returns false when the scenario
	// already uses what the step needs (the edit's one path, say).
	apply func(*scenario) bool
	// fires reports whether the step decides the scenario once reached;
	// nil means always. Only modes fire conditionally.
	fires func(*scenario) bool
	want  Decision
}

func want(b Behavior, src trajectory.PermissionSource, st trajectory.ChainStep) Decision {
	return Decision{Behavior: b, Source: src, Step: st}
}

func setPath(p string) func(*scenario) bool {
	return func(s *scenario) bool {
		if s.kind == kindBashWrite {
			s.fragments = append(s.fragments, "echo x > "+p)
			return true
		}
		if s.path != "" {
			return false
		}
		s.path = p
		return true
	}
}

func always(*scenario) bool { return true }

// setHook gives the call the hooks' one combined decision.
func setHook(b Behavior) func(*scenario) bool {
	return func(s *scenario) bool {
		if s.hook != "" {
			return false
		}
		s.hook = b
		return true
	}
}

// chainSteps is the chain as implemented, in order.
var chainSteps = []step{
	{name: "a hook's deny", kinds: allKinds, apply: setHook(Deny), want: want(Deny, trajectory.SourceHook, trajectory.StepHook)},
	{name: "a deny rule", kinds: allKinds, apply: func(s *scenario) bool { s.cfg.Deny = append(s.cfg.Deny, s.toolName()); return true }, want: want(Deny, trajectory.SourceRule, trajectory.StepDenyRule)},
	{name: "a dangerous command", kinds: []kind{kindBashWrite}, apply: func(s *scenario) bool { s.fragments = append(s.fragments, "rm -rf /"); return true }, want: want(Deny, trajectory.SourceSafety, trajectory.StepDangerousCommand)},
	{name: "a disallowed tool", kinds: allKinds, apply: func(s *scenario) bool {
		s.cfg.DisallowedTools = append(s.cfg.DisallowedTools, s.toolName())
		return true
	}, want: want(Deny, trajectory.SourceRule, trajectory.StepDisallowedTool)},
	{name: "a write outside the workspace", kinds: []kind{kindBashWrite, kindEdit}, apply: setPath("../outside/x.txt"), want: want(Deny, trajectory.SourceSafety, trajectory.StepPathValidation)},
	{name: "a hook's ask", kinds: allKinds, apply: setHook(Ask), want: want(Ask, trajectory.SourceHook, trajectory.StepHook)},
	{name: "the session memory of an approval", kinds: allKinds, apply: func(s *scenario) bool { s.remember = true; return true }, want: want(Allow, trajectory.SourceSessionMemory, trajectory.StepSessionMemory)},
	{name: "a read outside the workspace", kinds: []kind{kindRead}, apply: setPath("../outside/notes.txt"), want: want(Ask, trajectory.SourceSafety, trajectory.StepPathValidation)},
	{name: "a hook's allow", kinds: allKinds, apply: setHook(Allow), want: want(Allow, trajectory.SourceHook, trajectory.StepHook)},
	{name: "an ask rule", kinds: allKinds, apply: func(s *scenario) bool { s.cfg.Ask = append(s.cfg.Ask, s.toolName()); return true }, want: want(Ask, trajectory.SourceRule, trajectory.StepAskRule)},
	{name: "the bash read-only fast path", kinds: []kind{kindBashRead}, apply: always, want: want(Allow, trajectory.SourceReadOnly, trajectory.StepToolCheck)},
	{name: "a protected path", kinds: []kind{kindBashWrite, kindEdit}, apply: func(s *scenario) bool {
		// A configured pattern: the shell analysis may hard-block a bash
		// write into .git/hooks as code git runs later, which is another step.
		s.cfg.ProtectedPaths = append(s.cfg.ProtectedPaths, "deploy/**")
		return setPath("deploy/prod.yaml")(s)
	}, want: want(Ask, trajectory.SourceSafety, trajectory.StepProtectedPath)},
	{name: "bypass mode", kinds: allKinds, mode: trajectory.PermBypass, apply: always, want: want(Allow, trajectory.SourceMode, trajectory.StepBypassMode)},
	{name: "an allow rule", kinds: allKinds, apply: func(s *scenario) bool { s.cfg.Allow = append(s.cfg.Allow, s.toolName()); return true }, want: want(Allow, trajectory.SourceRule, trajectory.StepAllowRule)},
	{name: "plan mode", kinds: allKinds, mode: trajectory.PermPlan, apply: always,
		fires: func(s *scenario) bool { return s.kind == kindEdit || s.kind == kindBashWrite }, want: want(Deny, trajectory.SourceMode, trajectory.StepPlanMode)},
	{name: "the read-only tool auto-allow", kinds: []kind{kindRead}, apply: always, want: want(Allow, trajectory.SourceReadOnly, trajectory.StepReadOnly)},
	{name: "accept_edits mode", kinds: allKinds, mode: trajectory.PermAcceptEdits, apply: always,
		fires: func(s *scenario) bool { return s.kind == kindEdit }, want: want(Allow, trajectory.SourceMode, trajectory.StepAcceptEdits)},
	{name: "the default", kinds: allKinds, mode: trajectory.PermDefault, apply: always, want: want(Ask, trajectory.SourceMode, trajectory.StepDefault)},
}

var allModes = []trajectory.PermissionMode{trajectory.PermDefault, trajectory.PermPlan, trajectory.PermAcceptEdits, trajectory.PermBypass}

func stepNamed(name string) int {
	for i, st := range chainSteps {
		if st.name == name {
			return i
		}
	}
	panic("no step " + name)
}

// winner is the first of the active steps, in chain order, that fires.
func winner(active []int, s *scenario) step {
	hookAllow, protected := stepNamed("a hook's allow"), stepNamed("a protected path")
	on := map[int]bool{}
	for _, i := range active {
		on[i] = true
	}
	for i, st := range chainSteps {
		if !on[i] || (st.fires != nil && !st.fires(s)) {
			continue
		}
		if i == hookAllow && on[protected] {
			// A hook may skip the questions, never a protected path's.
			return chainSteps[protected]
		}
		return st
	}
	return chainSteps[len(chainSteps)-1]
}

func TestEveryPairOfChainStepsIsDecidedByTheChainOrder(t *testing.T) {
	f := newFixture(t)
	cases := 0
	for i, a := range chainSteps {
		for j := i + 1; j < len(chainSteps); j++ {
			b := chainSteps[j]
			if a.mode != "" && b.mode != "" {
				continue // one call has one mode
			}
			for _, k := range allKinds {
				if !has(a.kinds, k) || !has(b.kinds, k) {
					continue
				}
				modes := allModes
				if a.mode != "" {
					modes = []trajectory.PermissionMode{a.mode}
				} else if b.mode != "" {
					modes = []trajectory.PermissionMode{b.mode}
				}
				for _, m := range modes {
					s := &scenario{kind: k, cfg: Config{Mode: m}}
					if !a.apply(s) || !b.apply(s) {
						continue // both need the call's one path or its one hook decision
					}
					active := []int{i, j, stepNamed(modeStep(m))}
					// The kind of call brings its own step along.
					switch k {
					case kindBashRead:
						active = append(active, stepNamed("the bash read-only fast path"))
					case kindRead:
						active = append(active, stepNamed("the read-only tool auto-allow"))
					}
					w := winner(active, s)
					name := fmt.Sprintf("%s against %s, for %s in %s mode: %s decides", a.name, b.name, k, m, w.name)
					cases++
					t.Run(name, func(t *testing.T) {
						c := f.checker(t, s.cfg)
						req := s.request()
						if s.remember {
							c.Remember(req)
						}
						got := c.Check(req)
						if got.Behavior != w.want.Behavior || got.Source != w.want.Source || got.Step != w.want.Step {
							t.Errorf("Check(%s) = %s/%s/%s (%s), want %s/%s/%s", req.Command+strings.Join(pathsOf(req), ","),
								got.Behavior, got.Source, got.Step, got.Reason, w.want.Behavior, w.want.Source, w.want.Step)
						}
						if got.Behavior != Allow && got.Reason == "" {
							t.Errorf("a %s has no reason for the model", got.Behavior)
						}
					})
				}
			}
		}
	}
	if cases < 300 {
		t.Errorf("only %d cases were built; the table lost its pairs", cases)
	}
}

func modeStep(m trajectory.PermissionMode) string {
	switch m {
	case trajectory.PermBypass:
		return "bypass mode"
	case trajectory.PermPlan:
		return "plan mode"
	case trajectory.PermAcceptEdits:
		return "accept_edits mode"
	}
	return "the default"
}

func has(ks []kind, k kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func pathsOf(r Request) []string {
	var out []string
	for _, a := range r.Paths {
		out = append(out, a.Path)
	}
	return out
}

func TestAHooksAnswerNeverReleasesAHardStop(t *testing.T) {
	// The bug this guards: a hook answering ask used to return before the
	// deny rules, so a person could approve a denied command.
	f := newFixture(t)
	hard := []struct {
		name string
		cfg  Config
		req  Request
		step trajectory.ChainStep
	}{
		{"a deny rule", Config{Deny: []string{"Bash(git push:*)"}}, bash("git push"), trajectory.StepDenyRule},
		{"a dangerous command", Config{}, bash("rm -rf /"), trajectory.StepDangerousCommand},
		{"a disallowed tool", Config{DisallowedTools: []string{"Edit"}}, edit("main.go"), trajectory.StepDisallowedTool},
		{"a write outside the workspace", Config{}, edit("../outside/x"), trajectory.StepPathValidation},
		{"a write through a symlink that leads out", Config{}, edit("escape/x"), trajectory.StepPathValidation},
		{"a bash redirection outside the workspace", Config{}, bash("echo x > ../outside/y"), trajectory.StepPathValidation},
	}
	for _, h := range hard {
		for _, answer := range []Behavior{Ask, Allow} {
			for _, m := range allModes {
				t.Run(fmt.Sprintf("a hook answering %s does not release %s in %s mode", answer, h.name, m), func(t *testing.T) {
					cfg := h.cfg
					cfg.Mode = m
					c := f.checker(t, cfg)
					req := withHook(h.req, answer)
					c.Remember(req) // not even with a remembered approval
					if got := c.Check(req); got.Behavior != Deny || got.Step != h.step {
						t.Errorf("Check = %s/%s (%s), want deny at %s", got.Behavior, got.Step, got.Reason, h.step)
					}
				})
			}
		}
	}
}
