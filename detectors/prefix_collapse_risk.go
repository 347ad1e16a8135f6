package detectors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// prefixCollapseMin is the default of prefix_collapse_risk's min_prefix:
// a census of real tool sets counts resident × deferred pairs sharing 4 or more
// characters.
const prefixCollapseMin = 4

// notLoadedMark is what a line of the system prompt that names a deferred
// tool must say for the model to tell it from a callable one (the
// runtime writes "not loaded; activate with tool_search").
const notLoadedMark = "not loaded"

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// nameChar reports whether c can be part of a tool name.
func nameChar(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// namedAt returns the lines of text that name tool as a whole word.
func namedAt(text, tool string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for i := 0; ; {
			k := strings.Index(line[i:], tool)
			if k < 0 {
				break
			}
			k += i
			end := k + len(tool)
			if (k == 0 || !nameChar(line[k-1])) && (end == len(line) || !nameChar(line[end])) {
				out = append(out, line)
				break
			}
			i = k + 1
		}
	}
	return out
}

// mentions reports whether text names tool as a whole word.
func mentions(text, tool string) bool { return len(namedAt(text, tool)) > 0 }

// prefixPair is a resident and a deferred tool whose names share a prefix.
type prefixPair struct {
	resident, deferred string
	prefix             int
}

// prefixCollapseRisk finds the conditions of the prefix collapse
// (docs/failure-modes.md): resident and deferred tools whose names share
// min_prefix or more leading characters, deferred names in the system
// prompt (the static prefix) on a line without a "not loaded" label, and
// calls to a resident tool in a reply right after its deferred neighbour,
// not loaded, was named (in the reply's text or the messages the request
// before it added). One finding per session for the catalog, a warning
// when an unlabelled name has a resident neighbour and info otherwise,
// and one warning per suspicious call.
func prefixCollapseRisk(d *goDetector, s *Session, p Params) []Finding {
	minPrefix := p.Int("min_prefix")
	var start Located
	var resident, deferred []string
	for _, e := range s.Events {
		if ss, ok := e.Payload.(*trajectory.SessionStart); ok {
			start = e
			for _, t := range ss.Tools {
				if t.Deferred {
					deferred = append(deferred, t.Name)
				} else {
					resident = append(resident, t.Name)
				}
			}
			break
		}
	}
	if len(deferred) == 0 {
		return nil
	}
	var pairs []prefixPair
	neighbours := map[string][]prefixPair{}
	for _, r := range resident {
		for _, df := range deferred {
			if n := commonPrefix(r, df); n >= minPrefix {
				pp := prefixPair{r, df, n}
				pairs = append(pairs, pp)
				neighbours[r] = append(neighbours[r], pp)
			}
		}
	}
	var out []Finding
	// unlabelled are the deferred names the system prompt lists without
	// the label, with the request that sent that prompt.
	var unlabelled []string
	var promptAt *Located
	var offered []string
	var added string
	for i, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ModelRequest:
			offered = p.ToolNames
			var b strings.Builder
			for _, m := range p.NewMessages {
				for _, c := range m.Content {
					b.WriteString(c.Text)
					b.WriteString("\n")
					b.WriteString(c.Content)
					b.WriteString("\n")
				}
			}
			added = b.String()
			if p.System == "" {
				continue
			}
			for _, df := range deferred {
				if slices.Contains(unlabelled, df) {
					continue
				}
				for _, line := range namedAt(p.System, df) {
					if !strings.Contains(strings.ToLower(line), notLoadedMark) {
						unlabelled = append(unlabelled, df)
						if promptAt == nil {
							promptAt = &s.Events[i]
						}
						break
					}
				}
			}
		case *trajectory.ModelResponse:
			var said strings.Builder
			for _, b := range p.Content {
				if b.Type == trajectory.BlockText || b.Type == trajectory.BlockThinking {
					said.WriteString(b.Text)
					said.WriteString("\n")
				}
			}
			for b := range toolUses(p) {
				for _, pp := range neighbours[b.Name] {
					if slices.Contains(offered, pp.deferred) || !(mentions(said.String(), pp.deferred) || mentions(added, pp.deferred)) {
						continue
					}
					ev := []Located{e}
					if j := callOf(s, i+1, b.ID); j >= 0 {
						ev = append(ev, s.Events[j])
					}
					f := d.finding(s, fmt.Sprintf("turn %d calls %s right after %s, a deferred tool that is not loaded and shares its first %d characters (min_prefix %d), was named: a call meant for %s may have collapsed into %s",
						e.Turn, b.Name, pp.deferred, pp.prefix, minPrefix, pp.deferred, b.Name), ev...)
					f.Severity = SeverityWarning
					f.ToolUseID = b.ID
					out = append(out, f)
					break
				}
			}
		}
	}
	if len(pairs) == 0 && len(unlabelled) == 0 {
		return out
	}
	sev := SeverityInfo
	var parts []string
	if len(pairs) > 0 {
		var ps []string
		for _, pp := range pairs {
			ps = append(ps, fmt.Sprintf("%s × %s (%d)", pp.resident, pp.deferred, pp.prefix))
		}
		parts = append(parts, fmt.Sprintf("%d resident × deferred pair(s) share a prefix of min_prefix %d or more characters: %s", len(pairs), minPrefix, strings.Join(ps, ", ")))
	}
	if len(unlabelled) > 0 {
		parts = append(parts, fmt.Sprintf("the system prompt names deferred tool(s) %s on a line without a %q label, in the same form as a callable tool", strings.Join(unlabelled, ", "), notLoadedMark))
		for _, pp := range pairs {
			if slices.Contains(unlabelled, pp.deferred) {
				sev = SeverityWarning
			}
		}
	}
	ev := []Located{start}
	if promptAt != nil {
		ev = append(ev, *promptAt)
	}
	f := d.finding(s, strings.Join(parts, "; "), ev...)
	f.Severity = sev
	return append([]Finding{f}, out...)
}
