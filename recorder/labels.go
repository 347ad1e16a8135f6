package recorder

import (
	"slices"
	"strconv"

	"github.com/retrace-dev/retrace/trajectory"
)

// invalidLabel replaces a label value that is not a label. It passes
// trajectory.IsLabel itself, so the fixed event validates.
const invalidLabel = "invalid_label"

// fixLabels returns p with every label field that fails trajectory.IsLabel
// replaced by invalidLabel, and the number of fields replaced. The payload
// is copied before anything is changed: it belongs to the caller, who may
// still be using it. An empty optional label is left alone (it means
// "none"); an empty required one is left for Validate to report, since it
// is a missing value, not a leak.
func fixLabels(p trajectory.Payload) (trajectory.Payload, int) {
	switch v := p.(type) {
	case *trajectory.ToolFailure:
		if v.ErrorCode != "" && !trajectory.IsLabel(v.ErrorCode) {
			c := *v
			c.ErrorCode = invalidLabel
			return &c, 1
		}
	case *trajectory.SessionEnd:
		if v.ErrorCode != "" && !trajectory.IsLabel(v.ErrorCode) {
			c := *v
			c.ErrorCode = invalidLabel
			return &c, 1
		}
	case *trajectory.Reminder:
		if v.Kind != "" && !trajectory.IsLabel(v.Kind) {
			c := *v
			c.Kind = invalidLabel
			return &c, 1
		}
	case *trajectory.HookRun:
		if v.Hook != "" && !trajectory.IsLabel(v.Hook) {
			c := *v
			c.Hook = invalidLabel
			return &c, 1
		}
	case *trajectory.DefenseTrigger:
		if m, n := fixKeys(v.Evidence); n > 0 {
			c := *v
			c.Evidence = m
			return &c, n
		}
	case *trajectory.SessionStart:
		if m, n := fixKeys(v.Tags); n > 0 {
			c := *v
			c.Tags = m
			return &c, n
		}
	}
	return p, 0
}

// fixKeys returns a copy of m whose keys that are not labels are renamed
// invalid_label, invalid_label:2, ... so that no value is lost to a key
// collision. It returns m itself and 0 when every key is a label.
func fixKeys(m map[string]string) (map[string]string, int) {
	var bad []string
	for k := range m {
		if !trajectory.IsLabel(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return m, 0
	}
	// Sorted, so the same payload always gets the same names.
	slices.Sort(bad)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if trajectory.IsLabel(k) {
			out[k] = v
		}
	}
	next := 1
	for _, k := range bad {
		for {
			name := invalidLabel
			if next > 1 {
				name += ":" + strconv.Itoa(next)
			}
			next++
			if _, taken := out[name]; !taken {
				out[name] = m[k]
				break
			}
		}
	}
	return out, len(bad)
}
