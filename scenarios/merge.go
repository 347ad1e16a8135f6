package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/importer"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// mergeInput is what one agent run left to merge into its session.
type mergeInput struct {
	// wire is the main conversation's wire recording; subagents are the
	// other conversations', each linked to it.
	wire      string
	subagents []string
	// sides are the run's other conversations that started with no
	// parent: a background subagent the prompt links to a call of the
	// main session, else a side conversation (an opencode title
	// request), kept as a session of its own without the transcript,
	// which is the main session's.
	sides []string
	// format and transcript say where the agent's own transcript is; ""
	// when its profile knows none.
	format     importer.Format
	transcript string
	// stage is a directory for the imported sessions; runs is where the
	// merged sessions go.
	stage, runs string
}

// merged is the main session of a run, as written into the runs
// directory, and the files of its side conversations there.
type merged struct {
	path, session string
	sides         []string
}

// mergeAgentSessions writes each wire session of a run into the runs
// directory, merged with what the agent's own transcript adds, and
// returns the main one and notes on what could not be merged.
//
// The wire recording is the session's backbone: the mock saw every model
// request and response, every failed attempt and every tool_use answered
// by a tool_result, with measured model timings. The transcript adds
// what only the client knows, each event keeping the origin the importer
// gave it: the permission decisions of a call (observed transcript), a
// call's own run time when the client measured it (Codex's command
// durations), a failure kind more exact than the wire's tool_error (a
// denial, an interrupted call), a failure the wire took for a success (a
// command Codex refused to run, answered as plain text), and the
// client's version, permission mode and workspace. The wire's calls are
// the session's calls: one the wire never saw is not added, and none it
// saw is dropped.
func mergeAgentSessions(ctx context.Context, in mergeInput) (merged, []string, error) {
	var notes []string
	imported := map[string][]trajectory.Event{} // by parent_tool_use_id; "" for the main session
	if in.format != "" {
		var err error
		imported, notes, err = importTranscript(ctx, in)
		if err != nil {
			return merged{}, notes, err
		}
	}
	mainEvs, err := trajectory.ReadFile(in.wire)
	if err != nil {
		return merged{}, notes, fmt.Errorf("eval: read the wire recording %s: %w", in.wire, err)
	}
	main, err := mergeOne(in.wire, imported, in.runs, nil)
	if err != nil {
		return merged{}, notes, err
	}
	for _, sub := range in.subagents {
		link, err := relink(mainEvs, sub)
		if err != nil {
			return merged{}, notes, err
		}
		if link == nil {
			notes = append(notes, fmt.Sprintf("the conversation recorded in %s is tied to no call of the main session; it is kept as a session of its own", sub))
		}
		if _, err := mergeOne(sub, imported, in.runs, link); err != nil {
			return merged{}, notes, err
		}
	}
	// A side conversation that a call of the main session started (a
	// background subagent, whose call was answered before it began) is
	// a subagent all the same; the others are sides.
	for _, side := range in.sides {
		link, err := relink(mainEvs, side)
		if err != nil {
			return merged{}, notes, err
		}
		if link != nil {
			if _, err := mergeOne(side, imported, in.runs, link); err != nil {
				return merged{}, notes, err
			}
			continue
		}
		m, err := mergeOne(side, nil, in.runs, nil)
		if err != nil {
			return merged{}, notes, err
		}
		main.sides = append(main.sides, m.path)
	}
	return main, notes, nil
}

// parentLink ties a subagent's session to the call that started it.
type parentLink struct {
	session, toolUseID string
}

// relink returns the link of the conversation recorded in file to the
// main session (events main): its own when the wire recording made one;
// else, for a subagent the client ran in the background (Claude Code's
// Agent call answers at once, so the call was no longer waiting when the
// subagent's first request came), the main session's last call before
// it whose input holds a text of at least mockllm.PromptLinkMin bytes that the
// subagent's first user message contains, as the recorder links a
// waiting call; nil when no call does.
func relink(main []trajectory.Event, file string) (*parentLink, error) {
	evs, err := trajectory.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("eval: read the wire recording %s: %w", file, err)
	}
	if len(evs) == 0 || len(main) == 0 {
		return nil, nil
	}
	if st, ok := evs[0].Payload.(*trajectory.SessionStart); ok && st.ParentSession != "" {
		return &parentLink{session: st.ParentSession, toolUseID: st.ParentToolUseID}, nil
	}
	first, at := "", time.Time{}
	for _, ev := range evs {
		if req, ok := ev.Payload.(*trajectory.ModelRequest); ok {
			first, at = userText(req.NewMessages), ev.TS
			break
		}
	}
	if first == "" {
		return nil, nil
	}
	var link *parentLink
	for _, ev := range main {
		call, ok := ev.Payload.(*trajectory.ToolCall)
		if !ok || ev.TS.After(at) {
			continue
		}
		if mockllm.StartedBy(first, call.Input) {
			link = &parentLink{session: ev.Session, toolUseID: call.ToolUseID}
		}
	}
	return link, nil
}

// userText joins the text of the user messages in msgs.
func userText(msgs []trajectory.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role != trajectory.RoleUser {
			continue
		}
		for _, c := range m.Content {
			if c.Type == trajectory.BlockText {
				b.WriteString(c.Text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// importTranscript imports the agent's transcript and returns its
// sessions' events by the tool_use that started them ("" for the main
// session), with notes on what was not as expected.
func importTranscript(ctx context.Context, in mergeInput) (map[string][]trajectory.Event, []string, error) {
	out := map[string][]trajectory.Event{}
	if _, err := os.Stat(in.transcript); errors.Is(err, fs.ErrNotExist) {
		return out, []string{fmt.Sprintf("the agent wrote no transcript at %s; the session holds what the wire shows", in.transcript)}, nil
	}
	rep, err := importer.Import(ctx, importer.Options{Format: in.format, Paths: []string{in.transcript}, RunsDir: in.stage})
	if err != nil {
		return nil, nil, fmt.Errorf("eval: import the agent's transcript: %w", err)
	}
	var notes []string
	for _, p := range rep.Problems {
		notes = append(notes, "the agent's transcript: "+p.Error())
	}
	for _, s := range rep.Sessions {
		evs, err := trajectory.ReadFile(s.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("eval: read the imported transcript %s: %w", s.Path, err)
		}
		key := ""
		if st, ok := evs[0].Payload.(*trajectory.SessionStart); ok && st.ParentSession != "" {
			key = st.ParentToolUseID
			if key == "" {
				notes = append(notes, fmt.Sprintf("the transcript's subagent %s names no parent call; it is not merged", s.ID))
				continue
			}
		}
		if _, dup := out[key]; dup {
			notes = append(notes, fmt.Sprintf("the transcript %s holds more than one session for the same conversation; the first is merged", s.Source))
			continue
		}
		out[key] = evs
	}
	return out, notes, nil
}

// callFacts are what a transcript says of one tool call.
type callFacts struct {
	permissions []trajectory.Payload
	failure     *trajectory.ToolFailure
	end         *trajectory.ToolEnd
}

// facts indexes a transcript session's tool events by tool_use id.
func facts(evs []trajectory.Event) map[string]*callFacts {
	out := map[string]*callFacts{}
	get := func(id string) *callFacts {
		if out[id] == nil {
			out[id] = &callFacts{}
		}
		return out[id]
	}
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *trajectory.PermissionAllow, *trajectory.PermissionPrompt, *trajectory.PermissionDeny:
			id := trajectory.ToolUseIDOf(p)
			get(id).permissions = append(get(id).permissions, p)
		case *trajectory.ToolFailure:
			get(p.ToolUseID).failure = p
		case *trajectory.ToolEnd:
			get(p.ToolUseID).end = p
		}
	}
	return out
}

// mergeOne writes the wire session in file, merged with the transcript
// session of the same conversation, into runs under the wire session's
// id, so that a subagent's parent_session still names its parent.
//
// link, when set, is the subagent's tie to its parent that relink found
// although the wire recording has none: it is written into the
// session_start, tagged parent_link=prompt so that a reader knows it was
// inferred.
func mergeOne(file string, imported map[string][]trajectory.Event, runs string, link *parentLink) (merged, error) {
	evs, err := trajectory.ReadFile(file)
	if err != nil {
		return merged{}, fmt.Errorf("eval: read the wire recording %s: %w", file, err)
	}
	if len(evs) == 0 {
		return merged{}, fmt.Errorf("eval: the wire recording %s is empty", file)
	}
	st0, ok := evs[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return merged{}, fmt.Errorf("eval: the wire recording %s does not start with session_start", file)
	}
	if link != nil && st0.ParentSession == "" {
		st0.ParentSession, st0.ParentToolUseID = link.session, link.toolUseID
		st0.Tags = maps.Clone(st0.Tags)
		if st0.Tags == nil {
			st0.Tags = map[string]string{}
		}
		st0.Tags["parent_link"] = "prompt"
	}
	key, linked := "", true
	if st := st0; st.ParentSession != "" {
		// A subagent the wire could not tie to its call matches no
		// transcript session: never the main one.
		key, linked = st.ParentToolUseID, st.ParentToolUseID != ""
	}
	var tstart *trajectory.SessionStart
	var byCall map[string]*callFacts
	if t := imported[key]; linked && len(t) > 0 {
		tstart, _ = t[0].Payload.(*trajectory.SessionStart)
		byCall = facts(t)
	}
	// Every event keeps the time it was recorded at on the wire.
	var now time.Time
	rec, err := recorder.Create(runs, recorder.Options{SessionID: evs[0].Session, Clock: func() time.Time { return now }})
	if err != nil {
		return merged{}, fmt.Errorf("eval: %w", err)
	}
	failures := 0
	for _, ev := range evs {
		now = ev.TS
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			if tstart != nil {
				p.HarnessVersion = tstart.HarnessVersion
				p.PermissionMode, p.Mode = tstart.PermissionMode, tstart.Mode
				if p.Workspace == "" {
					p.Workspace = tstart.Workspace
				}
				p.Tags = maps.Clone(p.Tags)
				if p.Tags == nil {
					p.Tags = map[string]string{}
				}
				for from, to := range map[string]string{"source_session": "transcript_session", "client_version": "client_version"} {
					if v := tstart.Tags[from]; v != "" {
						p.Tags[to] = v
					}
				}
			}
			rec.Emit(ev.Turn, p)
		case *trajectory.ToolCall:
			rec.Emit(ev.Turn, p)
			if f := byCall[p.ToolUseID]; f != nil {
				for _, perm := range f.permissions {
					rec.Emit(ev.Turn, perm)
				}
			}
		case *trajectory.ToolFailure:
			// The client knows why a call failed better than its result's
			// is_error does: a denial or an interrupted call.
			if f := byCall[p.ToolUseID]; f != nil && f.failure != nil && p.FailureKind == trajectory.FailureToolError && f.failure.FailureKind != trajectory.FailureToolError {
				p = f.failure
			}
			failures++
			rec.Emit(ev.Turn, p)
		case *trajectory.ToolSuccess:
			// A result without is_error may still be a call that never
			// ran (Codex answers a command it refused with plain text):
			// the client's own account of the outcome wins.
			if f := byCall[p.ToolUseID]; f != nil && f.failure != nil {
				failures++
				rec.Emit(ev.Turn, f.failure)
				break
			}
			rec.Emit(ev.Turn, p)
		case *trajectory.SessionEnd:
			p.ToolFailures = failures
			rec.Emit(ev.Turn, p)
		case *trajectory.ToolEnd:
			// A run time the client measured replaces the wire's unknown;
			// the wire's output size stays.
			if f := byCall[p.ToolUseID]; f != nil && f.end != nil && !f.end.DurationUnknown && p.DurationUnknown {
				p.DurationMs, p.DurationUnknown, p.Observed = f.end.DurationMs, false, f.end.Observed
			}
			// A call the client refused did not run, whatever the wire saw.
			if f := byCall[p.ToolUseID]; f != nil && f.end != nil && f.end.NotRun {
				p.DurationMs, p.DurationUnknown, p.NotRun = 0, false, true
			}
			rec.Emit(ev.Turn, p)
		default:
			rec.Emit(ev.Turn, ev.Payload)
		}
	}
	if _, err := rec.Close(); err != nil {
		return merged{}, fmt.Errorf("eval: write the merged session: %w", err)
	}
	return merged{path: rec.Path(), session: rec.SessionID()}, nil
}
