package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// The runtimes that play a client session's turns in the scenario From
// makes of it (FromOptions.Runtime).
const (
	// RuntimeClient runs the client the session came from, by its agent
	// profile (agent: claude-code, agent: codex): the default.
	RuntimeClient = "client"
	// RuntimeBuiltin plays the turns through retrace's own runtime, with
	// the client's tool calls mapped onto its tools.
	RuntimeBuiltin = "builtin"
)

// The session_start.tags.source values of the sessions another client
// ran.
const (
	sourceImport    = "import"
	sourceMockServe = "mock_serve"
)

// clientSession reports whether rec is a session another client ran:
// imported from its transcript, or recorded on the wire by retrace mock
// serve --record.
func clientSession(rec *recording) bool {
	start, ok := rec.events[0].Payload.(*trajectory.SessionStart)
	return ok && (start.Tags["source"] == sourceImport || start.Tags["source"] == sourceMockServe)
}

// clientGen is what the scenario of a client session is made of: the
// main session's generator, the subagents' conversations, and where the
// workspace's files came from.
type clientGen struct {
	opts   FromOptions
	g      *generator
	start  *trajectory.SessionStart
	source string
	// client is the client's name (claude-code, codex, opencode); profile
	// the agent profile that runs it, "" with --runtime builtin.
	client, profile string
	// cwd is the recorded session's working directory, "" when unknown;
	// cwdRe matches it in a longer string: followed by a slash, by a
	// character no path name goes on with, or by the end.
	cwd   string
	cwdRe *regexp.Regexp
	subs  []*generator
	// seen says where each workspace file came from; missing lists what
	// the workspace could not be given.
	seen    []string
	missing []string
}

// fromClient makes the scenario of a session another client ran: the
// recorded responses as the script of the same client (agent:), or of
// retrace's runtime with RuntimeBuiltin; the workspace from the files the
// session read, as it saw them.
func fromClient(ctx context.Context, opts FromOptions, rec *recording) (FromResult, error) {
	fail := func(err error) (FromResult, error) {
		return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
	}
	start, ok := rec.events[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return fail(fmt.Errorf("%w: line %d is a %s, not the session_start a recording begins with", ErrFrom, rec.events[0].line, rec.events[0].Type()))
	}
	c := &clientGen{opts: opts, start: start, source: start.Tags["source"]}
	switch {
	case c.source != sourceImport && c.source != sourceMockServe:
		return fail(fmt.Errorf("%w: --runtime is for the sessions of another client (retrace import, retrace mock serve --record); this recording of retrace's own runtime plays through it already: leave --runtime out", ErrFrom))
	case opts.Runtime != "" && opts.Runtime != RuntimeClient && opts.Runtime != RuntimeBuiltin:
		return fail(fmt.Errorf("%w: --runtime %q: give %s (the client's own agent profile, the default) or %s (retrace's runtime)", ErrFrom, opts.Runtime, RuntimeClient, RuntimeBuiltin))
	case start.ParentSession != "":
		return fail(fmt.Errorf("%w: it is a subagent's session (of session %s); make the scenario of that session, which plays its subagents too", ErrFrom, start.ParentSession))
	case opts.Keep != nil && opts.Keep.Kind == PropDivergence:
		return fail(fmt.Errorf("%w: --keep %s: a run is compared with a recording of retrace's own runtime, and this is %s's session (%s); keep a detector, failure, defense, permission, event or the outcome", ErrFrom, opts.Keep, clientOf(start), c.source))
	case rec.end == nil:
		last := rec.events[len(rec.events)-1]
		return fail(fmt.Errorf("%w: it is torn: no session_end (the last event is a %s at line %d), so how the session ended is unknown; a scenario needs the whole session", ErrFrom, last.Type(), last.line))
	}
	c.client = clientOf(start)
	if err := c.chooseProfile(); err != nil {
		return fail(err)
	}
	g, err := clientGenerator(rec, opts.Keep)
	if err != nil {
		return fail(err)
	}
	c.g = g
	c.cwd = workspaceOf(rec)
	if c.cwd == "" {
		g.note("the session's working directory is not recorded, so tool inputs keep their absolute paths")
	} else {
		c.cwdRe = cwdPattern(c.cwd)
	}
	if c.profile != "" {
		if err := c.subagents(); err != nil {
			return fail(err)
		}
	}
	for _, sg := range append([]*generator{g}, c.subs...) {
		c.relativePaths(sg)
		c.stopReasons(sg)
	}
	files, err := c.workspace()
	if err != nil {
		return fail(err)
	}
	g.leftOut = append(g.leftOut, c.missing...)
	if c.profile == "" {
		c.builtin()
	}
	findings, err := detect(ctx, []string{opts.Recording}, sessionDetectors())
	if err != nil {
		return fail(err)
	}
	g.findings = findings
	if opts.Keep != nil {
		if err := g.shows(*opts.Keep); err != nil {
			return fail(err)
		}
	}
	var minimized *MinimizeSummary
	if opts.Minimize != nil {
		switch {
		case opts.Keep == nil:
			return FromResult{}, fmt.Errorf("%w: minimizing needs a property to keep: add --keep", ErrFrom)
		case c.profile != "":
			return fail(fmt.Errorf("%w: --minimize re-runs the scenario for each reduction, which with %s means hundreds of runs of the real client: give --runtime %s to minimize through retrace's runtime, or leave --minimize out", ErrFrom, c.client, RuntimeBuiltin))
		}
		var sum MinimizeSummary
		if files, sum, err = g.minimize(ctx, files, *opts.Minimize); err != nil {
			return fail(err)
		}
		minimized = &sum
	}
	var archive []byte
	if c.profile == "" {
		archive = c.builtinArchive(files)
	} else {
		archive = c.archive(files)
	}
	if _, err := Parse(archive, "generated.txtar"); err != nil {
		return FromResult{}, fmt.Errorf("the scenario made of %s does not parse (a retrace bug): %w", opts.Recording, err)
	}
	res := FromResult{Archive: archive, Files: len(files), Minimized: minimized}
	for _, sg := range append([]*generator{g}, c.subs...) {
		res.Turns += len(sg.turns)
		res.Calls += sg.calls
		res.LeftOut = append(res.LeftOut, sg.leftOut...)
	}
	if minimized != nil {
		res.Calls = minimized.CallsAfter
	}
	return res, nil
}

// clientOf names the client a session came from: session_start's client
// tag, which retrace import and mock serve --record write, else (a wire
// recording of an older retrace) the client whose tools the request
// offered; "" when neither tells.
func clientOf(start *trajectory.SessionStart) string {
	if c := start.Tags["client"]; c != "" {
		return c
	}
	has := func(name string) bool {
		return slices.ContainsFunc(start.Tools, func(t trajectory.ToolInfo) bool { return t.Name == name })
	}
	switch {
	case has("Read") && has("Bash"):
		return ProfileClaudeCode
	case has("exec_command") || has("apply_patch"):
		return ProfileCodex
	}
	return ""
}

// chooseProfile picks the agent profile that runs the client again, or
// none with RuntimeBuiltin, and refuses a client retrace cannot run.
func (c *clientGen) chooseProfile() error {
	if c.opts.Runtime == RuntimeBuiltin {
		return nil
	}
	known := slices.Sorted(maps.Keys(profiles))
	switch _, ok := profiles[c.client]; {
	case c.client == "":
		return fmt.Errorf("%w: it is from an unknown client: session_start.tags.client is not set and its tools are not those of %s; give --runtime %s to play its turns through retrace's runtime", ErrFrom, strings.Join(known, " or "), RuntimeBuiltin)
	case !ok:
		return fmt.Errorf("%w: it is a session of %s, a client retrace has no agent profile for (it has %s); give --runtime %s to play its turns through retrace's runtime", ErrFrom, c.client, strings.Join(known, ", "), RuntimeBuiltin)
	}
	c.profile = c.client
	return nil
}

// clientGenerator finds the parts of a client session a scenario is made
// of: its task, its responses and its calls.
func clientGenerator(rec *recording, keep *Property) (*generator, error) {
	g := &generator{rec: rec, keep: keep, start: rec.events[0]}
	for _, ev := range rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.ModelRequest:
			if g.prompt == "" {
				g.prompt = taskOf(p)
			} else if laterPrompt(p) {
				g.note("the person's prompt of line %d is not sent: the client gets one prompt, and the turns after it are played only if the client asks for them", ev.line)
			}
		case *trajectory.ModelResponse:
			g.turns = append(g.turns, ev)
		case *trajectory.ToolCall:
			g.calls++
		}
	}
	switch {
	case g.prompt == "":
		return nil, fmt.Errorf("%w: it has no model request with the user's task", ErrFrom)
	case len(g.turns) == 0:
		return nil, fmt.Errorf("%w: it has no model_response, so there is no script to play", ErrFrom)
	}
	return g, nil
}

// taskOf is the user's task in a client's first request: the last text
// of its last user message that is not a block the client adds itself
// (<environment_context>, <system-reminder>), else its last text.
func taskOf(req *trajectory.ModelRequest) string {
	var last, task string
	for _, m := range req.NewMessages {
		if m.Role != trajectory.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type != trajectory.BlockText || strings.TrimSpace(b.Text) == "" {
				continue
			}
			last = b.Text
			if !strings.HasPrefix(strings.TrimSpace(b.Text), "<") {
				task = b.Text
			}
		}
	}
	return cmp.Or(task, last)
}

// laterPrompt reports whether a request after the first carries a
// person's prompt: a text of a user message that is not a block the
// client adds itself (a reminder, a task notification).
func laterPrompt(req *trajectory.ModelRequest) bool {
	for _, m := range req.NewMessages {
		if m.Role != trajectory.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if t := strings.TrimSpace(b.Text); b.Type == trajectory.BlockText && t != "" && !strings.HasPrefix(t, "<") {
				return true
			}
		}
	}
	return false
}

// cwdRes find the working directory where a client states it in its
// first request: Codex's environment context, Claude Code's environment
// reminder.
var cwdRes = []*regexp.Regexp{
	regexp.MustCompile(`<cwd>([^<\n]+)</cwd>`),
	regexp.MustCompile(`Primary working directory: (\S+)`),
}

// workspaceOf is the recorded session's working directory: session_start's
// workspace (an import), else where the client said it in its first
// request (a wire recording).
func workspaceOf(rec *recording) string {
	start := rec.events[0].Payload.(*trajectory.SessionStart)
	if start.Workspace != "" {
		return start.Workspace
	}
	for _, ev := range rec.events {
		req, ok := ev.Payload.(*trajectory.ModelRequest)
		if !ok {
			continue
		}
		texts := []string{req.System}
		for _, m := range req.NewMessages {
			for _, b := range m.Content {
				texts = append(texts, b.Text)
			}
		}
		for _, t := range texts {
			for _, re := range cwdRes {
				if m := re.FindStringSubmatch(t); m != nil {
					return m[1]
				}
			}
		}
		break
	}
	return ""
}

// subagents finds the sessions of the subagents the session started,
// which retrace import and mock serve --record write next to it, linked
// by session_start.parent_session: each becomes a conversation of the
// script, matched by its task.
func (c *clientGen) subagents() error {
	dir := filepath.Dir(c.g.rec.file)
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == c.g.rec.file || filepath.Clean(name) == filepath.Clean(c.g.rec.file) || !childOf(name, c.g.start.Session) {
			continue
		}
		rec, err := readFrom(name)
		if err != nil {
			return fmt.Errorf("its subagent's session %s: %w", name, err)
		}
		sg, err := clientGenerator(rec, c.opts.Keep)
		if err != nil {
			return fmt.Errorf("its subagent's session %s: %w", name, err)
		}
		c.subs = append(c.subs, sg)
	}
	return nil
}

// childOf reports whether the trajectory file name is the session of a
// subagent of session, reading only its first event.
func childOf(name, session string) bool {
	rd, err := trajectory.Open(name)
	if err != nil {
		return false
	}
	defer rd.Close()
	ev, err := rd.Next()
	if err != nil {
		return false
	}
	start, ok := ev.Payload.(*trajectory.SessionStart)
	return ok && start.ParentSession == session
}

// cwdPattern matches cwd in a longer string: followed by a slash, by a
// character no path name goes on with, or by the end.
func cwdPattern(cwd string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(cwd) + `(?:/|[^A-Za-z0-9._/-]|$)`)
}

// relativePaths makes the paths under the recorded working directory in
// the tool inputs of g's script relative, so the calls find the files in
// the scenario's workspace, wherever eval puts it.
func (c *clientGen) relativePaths(g *generator) {
	if c.cwd == "" {
		return
	}
	for _, t := range g.turns {
		r := t.Payload.(*trajectory.ModelResponse)
		for i, b := range r.Content {
			if b.Type != trajectory.BlockToolUse || len(b.Input) == 0 {
				continue
			}
			var v any
			if json.Unmarshal(b.Input, &v) != nil {
				continue
			}
			out, err := json.Marshal(c.relative(v))
			if err == nil {
				r.Content[i].Input = out
			}
		}
	}
}

// relative rewrites the strings in v: the working directory itself
// becomes ".", a path under it relative, and the directory inside a
// longer string (a command line) "./".
func (c *clientGen) relative(v any) any {
	switch x := v.(type) {
	case string:
		switch {
		case x == c.cwd:
			return "."
		case strings.HasPrefix(x, c.cwd+"/") && !strings.ContainsAny(x, " \t\n"):
			return strings.TrimPrefix(x, c.cwd+"/")
		}
		// In a longer string (a command line) the directory is "." and a
		// path under it "./..."; a longer name it prefixes is left alone.
		return c.cwdRe.ReplaceAllStringFunc(x, func(m string) string {
			if strings.HasSuffix(m, "/") {
				return "./"
			}
			return "." + m[len(c.cwd):]
		})
	case map[string]any:
		for k, e := range x {
			x[k] = c.relative(e)
		}
	case []any:
		for i, e := range x {
			x[i] = c.relative(e)
		}
	}
	return v
}

// stopReasons gives the turns of an imported session whose transcript
// does not log stop reasons (Codex's) the one the importer inferred, so
// the script does not play them as replies missing one.
func (c *clientGen) stopReasons(g *generator) {
	if c.source != sourceImport {
		return
	}
	n := 0
	for _, t := range g.turns {
		if r := t.Payload.(*trajectory.ModelResponse); r.StopReasonRaw == "" && r.StopReason != "" {
			r.StopReasonRaw = string(r.StopReason)
			n++
		}
	}
	if n > 0 {
		g.note("the stop reasons of %d turns, which the transcript does not log: the importer's inference (tool_use after calls, else end_turn) is played", n)
	}
}

// The shapes of a file's content in a read's result.
var (
	// numberedRe is a line of Claude Code's Read (and retrace's read): its
	// number, a tab or an arrow, the text.
	numberedRe = regexp.MustCompile(`^ *[0-9]+(?:\t|→)(.*)$`)
	// catRe is a shell command that prints one file whole.
	catRe = regexp.MustCompile(`^cat (?:-- )?([A-Za-z0-9_./@+-]+)$`)
	// reminderRe is a reminder a client appends to a tool's result.
	reminderRe = regexp.MustCompile(`(?s)\n*<system-reminder>.*?</system-reminder>\s*`)
)

// workspace rebuilds the workspace the session started from: the
// snapshot when it has one, else each file the session read (its first
// read before anything wrote it), with the content it saw.
func (c *clientGen) workspace() ([]workspaceFile, error) {
	for _, ev := range c.g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			if p.WorkspaceSnapshot != "" {
				c.g.snapshot = ev
			}
		case *trajectory.WorkspaceSnapshot:
			c.g.snapshot = ev
		}
	}
	if c.g.snapshotRef() != "" {
		c.seen = append(c.seen, fmt.Sprintf("the workspace snapshot of line %d", c.g.snapshot.line))
		return c.g.workspace()
	}
	files := map[string]workspaceFile{}
	written := map[string]bool{}
	for _, g := range append([]*generator{c.g}, c.subs...) {
		c.reads(g, files, written)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: it has no workspace snapshot and read no file whose content the recording shows (no whole Read, no cat of a file), so the files the session started from are unknown; record the session with retrace run, which snapshots the workspace, or write the scenario's workspace by hand", ErrFrom)
	}
	c.missing = append(c.missing, "any file the session did not read: a command that lists or searches the workspace sees less than it did")
	out := slices.Collect(maps.Values(files))
	slices.SortFunc(out, func(a, b workspaceFile) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// reads adds to files each file g's session read, as its first read saw
// it, and notes what it could not take.
func (c *clientGen) reads(g *generator, files map[string]workspaceFile, written map[string]bool) {
	calls := map[string]*trajectory.ToolCall{}
	ok := map[string]bool{}
	for _, ev := range g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			calls[p.ToolUseID] = p
			if w := writtenPath(p); w != "" {
				if rel, inside := c.inWorkspace(w); inside {
					written[rel] = true
				}
			}
		case *trajectory.ToolSuccess:
			ok[p.ToolUseID] = true
		case *trajectory.ToolResult:
			call := calls[p.ToolUseID]
			if call == nil || p.IsError || !ok[p.ToolUseID] {
				continue
			}
			name, data, what := readOf(call, p.Text)
			if name == "" {
				continue
			}
			where := fmt.Sprintf("line %d%s", ev.line, originOf(g, ev))
			rel, inside := c.inWorkspace(name)
			switch {
			case !inside:
				c.missing = append(c.missing, fmt.Sprintf("%s: read at %s, outside the session's working directory", name, where))
				continue
			case what != "":
				c.missing = append(c.missing, fmt.Sprintf("%s: read at %s, %s", rel, where, what))
				continue
			case written[rel]:
				if _, ok := files[rel]; !ok {
					c.missing = append(c.missing, fmt.Sprintf("%s: read at %s only after the session wrote it, so its first content is unknown", rel, where))
				}
				continue
			}
			if prev, ok := files[rel]; ok {
				if !bytes.Equal(prev.data, data) {
					c.missing = append(c.missing, fmt.Sprintf("%s: read again at %s with other content (a command changed it?); the first read's is kept", rel, where))
				}
				continue
			}
			if why := unfit(rel, data); why != "" {
				c.missing = append(c.missing, fmt.Sprintf("%s: read at %s, %s", rel, where, why))
				continue
			}
			files[rel] = workspaceFile{path: rel, data: data}
			c.seen = append(c.seen, fmt.Sprintf("workspace/%s: as the %s call %s saw it, %s", rel, call.Tool, call.ToolUseID, where))
		}
	}
}

// unfit says why data cannot be a workspace file of a txtar; "" when it can.
func unfit(rel string, data []byte) string {
	switch {
	case strings.ContainsAny(rel, "\r\n") || strings.Contains(rel, " --"):
		return "a name a txtar section cannot hold"
	case len(data) > MaxWorkspaceFile:
		return fmt.Sprintf("%d bytes, over the %d a scenario holds", len(data), MaxWorkspaceFile)
	case bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data):
		return "binary"
	case hasMarker(data):
		return "it has a line like a txtar section marker (-- name --)"
	}
	return ""
}

// inWorkspace returns name relative to the session's working directory,
// and whether it lies inside it.
func (c *clientGen) inWorkspace(name string) (string, bool) {
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") {
		if c.cwd == "" {
			return name, false
		}
		rel, ok := strings.CutPrefix(path.Clean(name), strings.TrimSuffix(c.cwd, "/")+"/")
		return rel, ok
	}
	rel := path.Clean(name)
	return rel, rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// readOf reads a successful call's result as a file's content: the
// file's name and data, or why the content is not the whole file; ""
// for a call that read no file.
func readOf(call *trajectory.ToolCall, text string) (name string, data []byte, partial string) {
	var in map[string]any
	_ = json.Unmarshal(call.Input, &in)
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	switch call.Tool {
	case "Read", "read":
		name = str("file_path", "filePath", "path")
		if name == "" {
			return "", nil, ""
		}
		if in["offset"] != nil || in["limit"] != nil {
			return name, nil, "only in part (offset or limit), so its whole content is unknown"
		}
		if strings.HasPrefix(text, "<path>") {
			data, partial := opencodeRead(text)
			return name, data, partial
		}
		text = reminderRe.ReplaceAllString(text, "")
		if strings.Contains(text, "the file exists but the contents are empty") || strings.TrimSpace(text) == "" {
			return name, []byte{}, ""
		}
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			m := numberedRe.FindStringSubmatch(l)
			if m == nil {
				return name, nil, "in a form not known (not numbered lines)"
			}
			lines[i] = m[1]
		}
		return name, []byte(strings.Join(lines, "\n")), ""
	case "Bash", "bash", "exec_command", "shell", "local_shell":
		cmd := str("command", "cmd")
		if cmd == "" {
			if argv, ok := in["command"].([]any); ok && len(argv) == 3 && argv[1] == "-lc" {
				cmd, _ = argv[2].(string)
			}
		}
		m := catRe.FindStringSubmatch(strings.TrimSpace(cmd))
		if m == nil {
			return "", nil, ""
		}
		text = reminderRe.ReplaceAllString(text, "")
		if text != "" && !strings.HasSuffix(text, "\n") {
			// Claude Code trims a command's final newline; a text file
			// has one.
			text += "\n"
		}
		return m[1], []byte(text), ""
	}
	return "", nil, ""
}

// opencodeLineRe is a line of opencode's read: its number, a colon and
// a space, the text.
var opencodeLineRe = regexp.MustCompile(`^[0-9]+: (.*)$`)

// opencodeRead reads opencode's read result (<path>, <type>, then the
// numbered lines in <content> and "(End of file - total N lines)"): the
// file's content, or why it is not the whole file. opencode does not
// show whether the last line ends in a newline; a text file's does.
func opencodeRead(text string) ([]byte, string) {
	_, body, ok := strings.Cut(text, "<content>\n")
	body, _, closed := strings.Cut(body, "\n</content>")
	if !ok || !closed {
		return nil, "in a form not known (no <content>)"
	}
	body, end, whole := strings.Cut(body, "\n\n(End of file")
	if !whole || !strings.Contains(end, "total") {
		return nil, "only in part (opencode showed no end of file), so its whole content is unknown"
	}
	var b strings.Builder
	for l := range strings.SplitSeq(body, "\n") {
		m := opencodeLineRe.FindStringSubmatch(l)
		if m == nil {
			return nil, "in a form not known (not numbered lines)"
		}
		b.WriteString(m[1] + "\n")
	}
	return []byte(b.String()), ""
}

// writtenPath is the file a call writes, by its input; "" for a call
// that writes none that its input names.
func writtenPath(call *trajectory.ToolCall) string {
	switch call.Tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit", "write", "edit":
		var in map[string]any
		_ = json.Unmarshal(call.Input, &in)
		for _, k := range []string{"file_path", "filePath", "notebook_path", "path"} {
			if s, ok := in[k].(string); ok {
				return s
			}
		}
	}
	return ""
}

// originLine is the line of the client's own file an imported event was
// read from; 0 for an event that has none.
func originLine(p trajectory.Payload) int {
	switch p := p.(type) {
	case *trajectory.ModelRequest:
		return p.OriginLine
	case *trajectory.ModelResponse:
		return p.OriginLine
	case *trajectory.ModelError:
		return p.OriginLine
	}
	if r := trajectory.ToolRefOf(p); r != nil {
		return r.OriginLine
	}
	return 0
}

// originOf says where in the client's own file an imported event came
// from, as " (file:line)", for a comment; "" for a session that was not
// imported or an event without an origin line.
func originOf(g *generator, ev located) string {
	start, ok := g.start.Payload.(*trajectory.SessionStart)
	n := originLine(ev.Payload)
	if !ok || start.OriginFile == "" || n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s:%d)", filepath.Base(start.OriginFile), n)
}

// agentArgs are the flags that let the client run the calls it ran in
// the recording without asking: Claude Code's --allowedTools for each
// call an allow rule or a person allowed (a command exactly), and its
// --permission-mode as recorded. A call the client allowed by itself or
// denied needs none.
func (c *clientGen) agentArgs() []string {
	if c.profile != ProfileClaudeCode {
		return nil
	}
	allowed := map[string]bool{}
	calls := map[string]*trajectory.ToolCall{}
	for _, g := range append([]*generator{c.g}, c.subs...) {
		for _, ev := range g.rec.events {
			switch p := ev.Payload.(type) {
			case *trajectory.ToolCall:
				calls[p.ToolUseID] = p
			case *trajectory.PermissionAllow:
				if p.Step != trajectory.StepAllowRule && p.Source != trajectory.SourceUser {
					continue
				}
				rule := p.Tool
				if call := calls[p.ToolUseID]; call != nil && p.Tool == "Bash" {
					var in struct {
						Command string `json:"command"`
					}
					if json.Unmarshal(call.Input, &in) == nil && in.Command != "" {
						rule = "Bash(" + c.relative(in.Command).(string) + ")"
					}
				}
				allowed[rule] = true
			}
		}
	}
	var args []string
	if len(allowed) > 0 {
		args = append(args, "--allowedTools", strings.Join(slices.Sorted(maps.Keys(allowed)), ","))
	}
	switch c.start.PermissionMode {
	case trajectory.PermAcceptEdits:
		args = append(args, "--permission-mode", "acceptEdits")
	case trajectory.PermPlan:
		args = append(args, "--permission-mode", "plan")
	case trajectory.PermBypass:
		args = append(args, "--permission-mode", "bypassPermissions")
	}
	return args
}

// about says in the header what the session was and what plays it.
func (c *clientGen) about(b *strings.Builder) {
	who := cmp.Or(c.client, "an unknown client")
	if v := c.start.Tags["client_version"]; v != "" {
		who += " " + v
	}
	switch c.source {
	case sourceImport:
		fmt.Fprintf(b, "It is a session of %s, imported (retrace import) from\n%s; comments name the recording's line and that file's line.\n", who, c.start.OriginFile)
	default:
		fmt.Fprintf(b, "It is a session of %s, recorded on the wire by retrace mock serve --record;\ncomments name the recording's line.\n", who)
	}
	if c.profile != "" {
		fmt.Fprintf(b, "It runs %s again (agent: %s) against the mock serving the recorded\nresponses in order; a turn whose request no longer carries the recorded\ntool results stops the run and is named.\n", c.client, c.profile)
	} else {
		b.WriteString("It plays the recorded responses through retrace's runtime (--runtime builtin),\nwith the client's tool calls mapped onto retrace's tools.\n")
	}
	if c.profile == ProfileCodex {
		b.WriteString("Codex's sandbox mode is not recorded: the codex profile runs -s workspace-write,\nso a command a stricter sandbox refused may now run.\n")
	}
	if c.cwd != "" {
		fmt.Fprintf(b, "Paths under the session's working directory %s are relative in the\ntool inputs, so the calls find the scenario's workspace.\n", c.cwd)
	}
	b.WriteString("Its workspace is what the session saw:\n")
	for _, s := range c.seen {
		fmt.Fprintf(b, "- %s\n", s)
	}
}

// archive writes the scenario of a client run by its agent profile: the
// main session's turns, or a conversation each for it and its subagents.
func (c *clientGen) archive(files []workspaceFile) []byte {
	g := c.g
	var b strings.Builder
	fmt.Fprintf(&b, "Made by retrace scenario from %s (session %s).\n", filepath.Base(g.rec.file), g.start.Session)
	c.about(&b)
	if g.keep != nil {
		fmt.Fprintf(&b, "It tests one property, kept with --keep %s: it passes while the\nsession shows it, and fails once it does not.\n", g.keep)
	} else {
		b.WriteString("Its expectations are what the recorded session did; narrow them with\n--keep PROPERTY to the one thing the test is about.\n")
	}
	var left []string
	for _, sg := range append([]*generator{g}, c.subs...) {
		left = append(left, sg.leftOut...)
	}
	if len(left) > 0 {
		b.WriteString("Left out of it:\n")
		for _, l := range left {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	b.WriteString("-- scenario.yaml --\n")
	fmt.Fprintf(&b, "# From %s; each comment names the recording's line.\n", g.rec.file)
	fmt.Fprintf(&b, "description: %s\n", quote(fmt.Sprintf("From recording %s, session %s of %s.", filepath.Base(g.rec.file), g.start.Session, c.client)))
	first := g.firstRequestLine()
	fmt.Fprintf(&b, "# line %d%s: the first model_request's task\n", first, originOf(g, g.rec.events[slices.IndexFunc(g.rec.events, func(l located) bool { return l.line == first })]))
	fmt.Fprintf(&b, "prompt: %s\n", quote(g.prompt))
	if args := c.agentArgs(); len(args) > 0 {
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = quote(a)
		}
		fmt.Fprintf(&b, "# the calls the recorded client was allowed to make by a rule or a person\nagent: {profile: %s, args: [%s]}\n", c.profile, strings.Join(q, ", "))
	} else {
		fmt.Fprintf(&b, "agent: %s\n", c.profile)
	}
	b.WriteString("limits: {timeout: 3m}\n")
	b.WriteString("model:\n")
	if model := c.start.Model; model != "" {
		fmt.Fprintf(&b, "  model: %s\n", quote(model))
	}
	if len(c.subs) == 0 {
		b.WriteString(strings.TrimPrefix(scriptOf(g), "model:\n"))
	} else {
		b.WriteString("  conversations:\n")
		for i, sg := range c.subs {
			fmt.Fprintf(&b, "    # %s: the subagent's session %s\n", filepath.Base(sg.rec.file), sg.start.Session)
			fmt.Fprintf(&b, "    - name: sub%d\n      match: {first_user_contains: %s}\n", i+1, quote(sg.prompt))
			b.WriteString(indent(strings.TrimPrefix(scriptOf(sg), "model:\n"), "    "))
		}
		fmt.Fprintf(&b, "    - name: main\n      match: {first_user_contains: %s}\n", quote(g.prompt))
		b.WriteString(indent(strings.TrimPrefix(scriptOf(g), "model:\n"), "    "))
	}
	g.expect(&b)
	appendWorkspace(&b, files)
	return []byte(b.String())
}

// scriptOf is g's script block.
func scriptOf(g *generator) string {
	var b strings.Builder
	g.script(&b)
	return b.String()
}

// indent prefixes each line of s with pre.
func indent(s, pre string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// builtinTools map a client's tools onto retrace's, with the input keys
// each takes (the client's key, retrace's).
var builtinTools = map[string]struct {
	name string
	keys [][2]string
}{
	"Read":  {"read", [][2]string{{"file_path", "file_path"}, {"offset", "offset"}, {"limit", "limit"}}},
	"Bash":  {"bash", [][2]string{{"command", "command"}, {"description", "description"}, {"timeout", "timeout"}}},
	"Write": {"write", [][2]string{{"file_path", "file_path"}, {"content", "content"}}},
	"Edit":  {"edit", [][2]string{{"file_path", "file_path"}, {"old_string", "old_string"}, {"new_string", "new_string"}, {"replace_all", "replace_all"}}},
	"Glob":  {"glob", [][2]string{{"pattern", "pattern"}, {"path", "path"}}},
	"Grep":  {"grep", [][2]string{{"pattern", "pattern"}, {"path", "path"}, {"glob", "glob"}, {"output_mode", "output_mode"}}},
	"LS":    {"ls", [][2]string{{"path", "path"}}},
	// Codex runs commands; its workdir is dropped, the scenario's
	// workspace being the directory they run in.
	"exec_command": {"bash", [][2]string{{"cmd", "command"}}},
	// opencode's tools have retrace's names and camelCase keys.
	"read":  {"read", [][2]string{{"filePath", "file_path"}, {"file_path", "file_path"}, {"offset", "offset"}, {"limit", "limit"}}},
	"bash":  {"bash", [][2]string{{"command", "command"}, {"description", "description"}, {"timeout", "timeout"}}},
	"write": {"write", [][2]string{{"filePath", "file_path"}, {"file_path", "file_path"}, {"content", "content"}}},
	"edit":  {"edit", [][2]string{{"filePath", "file_path"}, {"file_path", "file_path"}, {"oldString", "old_string"}, {"newString", "new_string"}, {"replaceAll", "replace_all"}}},
}

// builtin maps the session's tool calls onto retrace's tools, in the
// script and in the events the expectations are derived from, and gives
// the session the configuration that lets retrace's runtime run the
// calls the client ran: an allow rule for each call the client allowed.
// The client's own decisions (its permission events) are not
// expectations of retrace's runtime, which decides for itself.
func (c *clientGen) builtin() {
	g := c.g
	mapped := map[string]string{}
	for _, t := range g.turns {
		r := t.Payload.(*trajectory.ModelResponse)
		for i, b := range r.Content {
			m, ok := builtinTools[b.Name]
			if b.Type != trajectory.BlockToolUse || !ok {
				if b.Type == trajectory.BlockToolUse {
					mapped[b.Name] = ""
				}
				continue
			}
			var in map[string]any
			_ = json.Unmarshal(b.Input, &in)
			out := map[string]any{}
			for _, k := range m.keys {
				if v, ok := in[k[0]]; ok {
					out[k[1]] = v
				}
			}
			if data, err := json.Marshal(out); err == nil {
				r.Content[i].Input = data
			}
			r.Content[i].Name = m.name
			mapped[b.Name] = m.name
		}
	}
	var kept []located
	allow := map[string]bool{}
	ran := map[string]bool{}
	for _, ev := range g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.PermissionAllow, *trajectory.PermissionDeny, *trajectory.PermissionPrompt:
			continue
		case *trajectory.ToolSuccess:
			ran[p.ToolUseID] = true
		}
		if r := trajectory.ToolRefOf(ev.Payload); r != nil {
			if to := mapped[r.Tool]; to != "" {
				r.Tool = to
			}
		}
		kept = append(kept, ev)
	}
	g.rec.events = kept
	// A client's wire may flag no result as an error (Codex's has no
	// such flag): retrace's runtime flags a failed call's, so each turn
	// expects is_error as the call's recorded outcome.
	failed := map[string]bool{}
	for _, ev := range kept {
		if p, ok := ev.Payload.(*trajectory.ToolFailure); ok {
			failed[p.ToolUseID] = true
		}
	}
	for _, ev := range kept {
		if p, ok := ev.Payload.(*trajectory.ModelRequest); ok {
			for _, m := range p.NewMessages {
				for i, b := range m.Content {
					if b.Type == trajectory.BlockToolResult {
						m.Content[i].IsError = failed[b.ToolUseID]
					}
				}
			}
		}
	}
	for i := range g.rec.events {
		if g.rec.events[i].Type() == trajectory.TypeSessionEnd {
			g.rec.end = &g.rec.events[i]
		}
	}
	// An allow rule for each call that ran: retrace's rule syntax is
	// Claude Code's.
	for _, t := range g.turns {
		for _, b := range t.Payload.(*trajectory.ModelResponse).ToolUses() {
			if !ran[b.ID] {
				continue
			}
			switch b.Name {
			case "bash":
				var in struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(b.Input, &in) == nil && in.Command != "" {
					allow["Bash("+in.Command+")"] = true
				}
			case "write", "edit":
				allow[strings.ToUpper(b.Name[:1])+b.Name[1:]] = true
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(mapped)) {
		if mapped[from] == "" {
			g.note("tool %s has no counterpart among retrace's tools: its calls are played as they are, and retrace's runtime answers them as unknown", from)
		}
	}
	g.note("the client's permission decisions are not expected of retrace's runtime, which decides itself (its config allows the calls that ran)")
	if c.start.SystemPrompt != "" {
		g.note("the client's system prompt; the scenario runs with eval's")
	}
	st := *c.start
	st.Config = nil
	if len(allow) > 0 {
		cfg, _ := json.Marshal(map[string]any{"permissions": map[string]any{"allow": slices.Sorted(maps.Keys(allow))}})
		st.Config = cfg
	}
	g.start.Payload = &st
}

// builtinArchive writes the scenario of a client session played by
// retrace's runtime: the native scenario's layout, with the header saying
// what the session was and where its workspace came from.
func (c *clientGen) builtinArchive(files []workspaceFile) []byte {
	g := c.g
	body := string(g.archive(files))
	head, rest, _ := strings.Cut(body, "\n")
	var b strings.Builder
	b.WriteString(head + "\n")
	c.about(&b)
	b.WriteString(rest)
	out := strings.Replace(b.String(), fmt.Sprintf("# line %d: session_start.config, the effective configuration\n", g.start.line),
		"# not recorded: allow rules for the calls the client ran, so that retrace's runtime runs them too\n", 1)
	return []byte(out)
}
