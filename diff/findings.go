package diff

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
)

// findingKey is what a finding is matched by across runs: the detector,
// the scenario the session ran (its session_start tag "scenario", when
// there is one) and the tool of the call it is about. Session ids, turns
// and lines differ between two runs of the same thing and are left out.
type findingKey struct {
	detector, scenario, tool string
}

func (k findingKey) String() string {
	s := k.detector
	if k.scenario != "" {
		s += " scenario=" + k.scenario
	}
	if k.tool != "" {
		s += " tool=" + k.tool
	}
	return s
}

// keys returns the key of each of the side's findings.
func (s *side) keys(ctx context.Context) []findingKey {
	scen := map[string]string{}
	tools := map[[2]string]string{}
	if len(s.findings) > 0 {
		if tab, err := s.in.DB.Query(ctx, "SELECT session, json_extract_string(tags, '$.scenario') FROM raw_session_start"); err == nil {
			for _, r := range tab.Rows {
				if r[1] != nil {
					scen[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
				}
			}
		}
		var ids []string
		for _, f := range s.findings {
			if f.ToolUseID != "" && len(ids) < 1000 {
				ids = append(ids, sqlString(f.ToolUseID))
			}
		}
		if len(ids) > 0 {
			if tab, err := s.in.DB.Query(ctx, "SELECT session, tool_use_id, tool FROM tool_calls WHERE tool_use_id IN ("+strings.Join(ids, ", ")+")"); err == nil {
				for _, r := range tab.Rows {
					tools[[2]string{fmt.Sprint(r[0]), fmt.Sprint(r[1])}] = fmt.Sprint(r[2])
				}
			}
		}
	}
	out := make([]findingKey, len(s.findings))
	for i, f := range s.findings {
		out[i] = findingKey{detector: f.Detector, scenario: scen[f.Session], tool: tools[[2]string{f.Session, f.ToolUseID}]}
	}
	return out
}

// diffFindings matches the two sides' findings by key, as multisets: a
// key found 3 times in the base and 5 in the candidate gives 2 new
// findings (the candidate's last two of that key, in report order).
func diffFindings(ctx context.Context, b, c *side) Findings {
	bk, ck := b.keys(ctx), c.keys(ctx)
	count := func(ks []findingKey) map[findingKey]int {
		m := map[findingKey]int{}
		for _, k := range ks {
			m[k]++
		}
		return m
	}
	bn, cn := count(bk), count(ck)
	extra := func(fs []detectors.Finding, ks []findingKey, mine, other map[findingKey]int) []detectors.Finding {
		seen := map[findingKey]int{}
		out := []detectors.Finding{}
		for i, f := range fs {
			k := ks[i]
			seen[k]++
			if seen[k] > other[k] {
				out = append(out, f)
			}
		}
		slices.SortStableFunc(out, func(x, y detectors.Finding) int { return y.Severity.Rank() - x.Severity.Rank() })
		return out
	}
	return Findings{New: extra(c.findings, ck, cn, bn), Resolved: extra(b.findings, bk, bn, cn)}
}
