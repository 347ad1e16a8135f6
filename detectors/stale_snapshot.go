package detectors

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// staleRechecksDefault is the default of min_rechecks.
const staleRechecksDefault = 2

// statusLine is one line of git status --short or --porcelain: two status
// letters, a space, the path.
var statusLine = regexp.MustCompile(`^([ MTADRCU?!]{2}) (\S.*)$`)

// trimmedStatusLine is a status line as a prompt may render it, its
// leading blank trimmed: one or two letters and a path without blanks.
var trimmedStatusLine = regexp.MustCompile(`^([MTADRCU?!]{1,2}) (\S+)$`)

// snapshotWindow is how many lines after the header the snapshot's status
// lines (or its clean marker) may start within.
const snapshotWindow = 40

// cleanMarkers say a snapshot's tree is clean.
var cleanMarkers = []string{"(clean)", "working tree clean", "nothing to commit"}

// shortStatus matches a bash command that is a git status in the short
// or porcelain format, whose output statusLine reads.
var shortStatus = regexp.MustCompile(`^\s*git\s+status\b.*(\s-s\b|\s--short\b|\s--porcelain\b)`)

// staleSnapshot finds a conflict of fact sources: the system
// prompt carries a git status frozen when the session started, a git
// status the model ran later returned something else, and the model ran
// the same git status min_rechecks more times and got the same answer
// each time: it kept checking a live state that contradicts the frozen
// one instead of trusting either.
//
// The snapshot is the first block of git status lines (status letters, a
// space, a path; see gitStatusIn) after a line that names git status, in
// session_start's system_prompt or else the first request's system, or a
// clean marker such as "(clean)" there. Only git status
// -s/--short/--porcelain results are compared, as sets of lines. A call
// on a file the snapshot lists that fails with ENOENT is reported at info
// (missingSnapshotFiles). The workspace_snapshot event is a blob
// reference the detectors do not read, and a file listing in the prompt
// other than git status is not compared: neither is judged.
func staleSnapshot(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_rechecks")
	var snap []string
	var at Located
	have := false
	for _, e := range s.Events {
		switch pl := e.Payload.(type) {
		case *trajectory.SessionStart:
			if pl.SystemPrompt != "" {
				snap, have = gitStatusIn(pl.SystemPrompt)
				at = e
			}
		case *trajectory.ModelRequest:
			if at.Seq == 0 && pl.System != "" {
				snap, have = gitStatusIn(pl.System)
				at = e
			}
		}
		if at.Seq != 0 {
			break
		}
	}
	if !have {
		return nil
	}
	var first *callResult
	var rechecks []Located
	for _, c := range callsWithResults(s) {
		if c.call.Tool != "bash" || !c.found || !c.ok {
			continue
		}
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(c.call.Input, &in) != nil || !shortStatus.MatchString(in.Command) {
			continue
		}
		live := statusLines(c.text)
		switch {
		case first == nil && !slices.Equal(live, snap):
			first = &c
		case first != nil && slices.Equal(live, statusLines(first.text)):
			rechecks = append(rechecks, c.at)
		}
	}
	out := missingSnapshotFiles(d, s, snap, at)
	if first == nil || len(rechecks) < limit {
		return out
	}
	f := d.finding(s, fmt.Sprintf("the system prompt's frozen git status lists %s; git status at turn %d returned %s, and the model ran it %d more times with the same answer (min_rechecks %d): it cannot tell which of the two sources is live",
		describeStatus(snap), first.at.Turn, describeStatus(statusLines(first.text)), len(rechecks), limit),
		append([]Located{first.at, at}, rechecks...)...)
	f.ToolUseID = first.call.ToolUseID
	return append([]Finding{f}, out...)
}

// missingSnapshotFiles reports, at info, calls on a path the frozen git
// status lists as present (any status but a deletion) that failed with
// ENOENT: the snapshot sent the model to a file that is gone. The tools
// told it the truth, so this is worth knowing rather than a defect.
func missingSnapshotFiles(d *goDetector, s *Session, snap []string, at Located) []Finding {
	listed := map[string]bool{}
	for _, e := range snap {
		code, path, _ := strings.Cut(e, " ")
		if strings.Contains(code, "D") {
			continue
		}
		if _, to, ok := strings.Cut(path, " -> "); ok {
			path = to
		}
		listed[path] = true
	}
	var ev []Located
	var names []string
	calls := map[string]Located{}
	for _, e := range s.Events {
		switch pl := e.Payload.(type) {
		case *trajectory.ToolCall:
			if path := inputPath(pl.Input); path != "" && listedPath(listed, path) {
				calls[pl.ToolUseID] = e
			}
		case *trajectory.ToolFailure:
			if c, ok := calls[pl.ToolUseID]; ok && pl.ErrorCode == "ENOENT" {
				ev = append(ev, c, e)
				names = append(names, fmt.Sprintf("%s %s (turn %d)", pl.Tool, inputPath(c.Payload.(*trajectory.ToolCall).Input), e.Turn))
			}
		}
	}
	if len(ev) == 0 {
		return nil
	}
	f := d.finding(s, fmt.Sprintf("the system prompt's frozen git status lists files that are gone: %s failed with ENOENT; the model acted on the frozen snapshot",
		strings.Join(names, ", ")), append(ev, at)...)
	f.ToolUseID = trajectory.ToolUseIDOf(ev[0].Payload)
	f.Severity = SeverityInfo
	return []Finding{f}
}

// inputPath returns the file_path or path of a tool input, or "".
func inputPath(input json.RawMessage) string {
	var in struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	if in.FilePath != "" {
		return in.FilePath
	}
	return in.Path
}

// listedPath reports whether path, relative or absolute, is one of the
// snapshot's workspace-relative paths.
func listedPath(listed map[string]bool, path string) bool {
	path = strings.TrimPrefix(path, "./")
	if listed[path] {
		return true
	}
	for p := range listed {
		if strings.HasSuffix(path, "/"+p) {
			return true
		}
	}
	return false
}

// gitStatusIn returns the status entries of the first block of status
// lines within snapshotWindow lines after a line naming git status in
// prompt, sorted, and whether there is a snapshot: a block, or a clean
// marker before any block. A header with neither is no snapshot (not
// observable), never a clean one.
func gitStatusIn(prompt string) ([]string, bool) {
	lines := strings.Split(prompt, "\n")
	for i, l := range lines {
		low := strings.ToLower(l)
		if !strings.Contains(low, "git status") && !strings.Contains(low, "gitstatus") {
			continue
		}
		var out []string
		for _, l := range lines[i+1 : min(len(lines), i+1+snapshotWindow)] {
			l = strings.TrimRight(l, "\r")
			if e, ok := statusEntry(l); ok {
				out = append(out, e)
				continue
			}
			if len(out) > 0 {
				break
			}
			low := strings.ToLower(l)
			if slices.ContainsFunc(cleanMarkers, func(m string) bool { return strings.Contains(low, m) }) {
				return nil, true
			}
		}
		slices.Sort(out)
		return out, len(out) > 0
	}
	return nil, false
}

// statusEntry reads one status line, in the porcelain form or trimmed,
// as its status letters (blanks dropped), a space and its path, so that
// " M a.go" and "M a.go" are the same entry.
func statusEntry(l string) (string, bool) {
	m := statusLine.FindStringSubmatch(l)
	if m == nil {
		m = trimmedStatusLine.FindStringSubmatch(l)
	}
	// Two blanks are no status: git lists only changed paths.
	if m == nil || strings.HasPrefix(l, "##") || strings.TrimSpace(m[1]) == "" || strings.TrimSpace(m[2]) == "" {
		return "", false
	}
	return strings.TrimSpace(m[1]) + " " + strings.TrimSpace(m[2]), true
}

// statusLines returns the status entries of a git status result, sorted;
// branch headers (##) and anything else are left out.
func statusLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if e, ok := statusEntry(strings.TrimRight(l, "\r")); ok {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// describeStatus renders a set of status entries for a message.
func describeStatus(entries []string) string {
	if len(entries) == 0 {
		return "a clean tree"
	}
	var paths []string
	for _, e := range entries {
		_, path, _ := strings.Cut(e, " ")
		paths = append(paths, path)
	}
	if len(paths) > 3 {
		paths = append(paths[:3], "…")
	}
	return fmt.Sprintf("%d changed paths (%s)", len(entries), strings.Join(paths, ", "))
}
