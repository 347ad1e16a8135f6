package detectors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// pendingAsMissing finds a tool the model was told does not exist while
// its MCP server was still connecting ("absent" has
// two meanings). The tool is not in session_start's catalog (its server
// had not listed it when the session started), a call to it was answered
// not_found with an error_code other than "pending" (the runtime's code
// for "not here yet"), and either the request before the call names its
// server in pending_sources (observed: the server was connecting), or,
// for trajectories without pending_sources, the tool is there later in
// the session after all: a model_request offers it or a call to it
// succeeds (inferred: its server connected late). The observed case is
// an error, the inferred one a warning. An answer that the tool exists is
// honest: the error_code not_loaded (a late server's tool is registered
// as deferred, so a call before tool_search loads it gets that), or a
// tool_result text saying "connecting", "not available yet" or "not
// loaded", for harnesses that use other codes. A tool's server is the
// part of an mcp__<server>__<tool> name before the second "__".
//
// A deferred tool of the catalog answered not_loaded is the deferred-tool
// path, not this one; a name that never shows up later is a made-up tool
// (hallucinated_tool).
func pendingAsMissing(d *goDetector, s *Session, _ Params) []Finding {
	known := map[string]bool{}
	var out []Finding
	var req Located
	for i, e := range s.Events {
		switch pl := e.Payload.(type) {
		case *trajectory.ModelRequest:
			req = e
		case *trajectory.SessionStart:
			for _, t := range pl.Tools {
				known[t.Name] = true
			}
		case *trajectory.ToolFailure:
			if pl.FailureKind != trajectory.FailureNotFound || pl.ErrorCode == "pending" || pl.ErrorCode == "not_loaded" || known[pl.Tool] {
				continue
			}
			ev := []Located{e}
			told := "not_found"
			if pl.ErrorCode != "" {
				told += " (" + pl.ErrorCode + ")"
			}
			if r, ok := toolResultOf(s, i+1, pl.ToolUseID); ok {
				text := strings.ToLower(r.Payload.(*trajectory.ToolResult).Text)
				if strings.Contains(text, "connecting") || strings.Contains(text, "not available yet") || strings.Contains(text, "not loaded") {
					continue
				}
				ev = append(ev, r)
			}
			msg, severity := "", d.info.Severity
			if server, ok := pendingServer(req, pl.Tool); ok {
				ev, severity = append(ev, req), SeverityError
				msg = fmt.Sprintf("%s was answered %s at turn %d while its MCP server %s was still connecting (the request of turn %d lists it in pending_sources): the model was told the tool does not exist",
					pl.Tool, told, e.Turn, server, req.Turn)
			} else {
				later, how, ok := availableLater(s, i+1, pl.Tool)
				if !ok {
					continue
				}
				ev = append(ev, later)
				msg = fmt.Sprintf("%s was answered %s at turn %d, but it is not in the session's starting catalog and %s at turn %d: its source (an MCP server) was still connecting, and the model was told the tool does not exist",
					pl.Tool, told, e.Turn, how, later.Turn)
			}
			f := d.finding(s, msg, ev...)
			f.Severity = severity
			f.ToolUseID = pl.ToolUseID
			out = append(out, f)
		}
	}
	return out
}

// toolResultOf returns the tool_result of call id from index from on.
func toolResultOf(s *Session, from int, id string) (Located, bool) {
	for _, e := range s.Events[from:] {
		if r, ok := e.Payload.(*trajectory.ToolResult); ok && r.ToolUseID == id {
			return e, true
		}
	}
	return Located{}, false
}

// availableLater returns the first event from index from on that shows
// tool available: a model_request offering it, or its call succeeding.
func availableLater(s *Session, from int, tool string) (Located, string, bool) {
	for _, e := range s.Events[from:] {
		switch pl := e.Payload.(type) {
		case *trajectory.ModelRequest:
			if slices.Contains(pl.ToolNames, tool) {
				return e, "a request offered it", true
			}
		case *trajectory.ToolSuccess:
			if pl.Tool == tool {
				return e, "a call to it succeeded", true
			}
		}
	}
	return Located{}, "", false
}

// pendingServer returns the server of an mcp__<server>__<tool> name when
// req names it among its pending_sources (compared as the runtime
// normalises server names: bytes outside [a-zA-Z0-9_-] as '_', runs of
// '_' as one, '_' trimmed).
func pendingServer(req Located, tool string) (string, bool) {
	r, ok := req.Payload.(*trajectory.ModelRequest)
	rest, isMCP := strings.CutPrefix(tool, "mcp__")
	if !ok || !isMCP {
		return "", false
	}
	server, _, _ := strings.Cut(rest, "__")
	for _, p := range r.PendingSources {
		if normalizeServer(p) == server {
			return p, true
		}
	}
	return "", false
}

// normalizeServer is the runtime's normalisation of an MCP server's name
// in its tools' names.
func normalizeServer(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	n := string(b)
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	return strings.Trim(n, "_")
}
