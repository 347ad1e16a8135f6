package replay

import (
	"fmt"
	"os"
	"strings"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/compare"
)

// compareOptions joins the comparison options the caller gave (the
// command line's rules and levels) with the replay section of the
// configuration the replay ran under: the file's rules first, then the
// caller's; the caller's levels replace the file's. $TMPDIR's paths are
// volatile like /tmp's.
func compareOptions(given compare.Options, section config.Replay) (compare.Options, error) {
	out := given
	out.Rules = nil
	for _, r := range section.Normalize {
		in := make([]compare.Scope, 0, len(r.In))
		for _, s := range r.In {
			in = append(in, compare.Scope(s))
		}
		rule, err := compare.NewRule(r.Where, r.Pattern, r.Replace, r.Tools, in)
		if err != nil {
			return out, fmt.Errorf("%w: %s: replay.normalize: %w", ErrInput, r.Where, err)
		}
		out.Rules = append(out.Rules, rule)
	}
	out.Rules = append(out.Rules, given.Rules...)
	out.Tools = map[string]compare.Level{}
	for tool, l := range section.Tools {
		level, err := compare.ParseLevel(l)
		if err != nil {
			return out, fmt.Errorf("%w: replay.tools.%s: %w", ErrInput, tool, err)
		}
		out.Tools[tool] = level
	}
	for tool, l := range given.Tools {
		out.Tools[tool] = l
	}
	out.TempDirs = append(append([]string(nil), given.TempDirs...), os.TempDir())
	return out, nil
}

// replaySectionNote says that the recording's own configuration loosened
// the comparison, when it did: its rules apply even to an untrusted
// recording, because they run nothing and permit nothing, but the person
// reading the report should know where they came from.
func replaySectionNote(section config.Replay) []string {
	var parts []string
	if n := len(section.Normalize); n > 0 {
		parts = append(parts, plural(n, "normalisation rule"))
	}
	if n := len(section.Tools); n > 0 {
		parts = append(parts, plural(n, "tool comparison level"))
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the recording's %s sets %s; applied, because they only loosen the comparison (the normalised line names each rule that replaced text)",
		config.FileName, strings.Join(parts, " and "))}
}
