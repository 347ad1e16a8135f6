package synth

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

func (g *session) spec(name string) *toolSpec {
	for i := range g.catalog {
		if g.catalog[i].name == name {
			return &g.catalog[i]
		}
	}
	return nil
}

// newCall makes a call of the given kind with a plausible input, and now
// and then turns it into one of the mistakes models make: a tool that does
// not exist, an MCP tool not loaded yet, an input that misses a field.
func (g *session) newCall(kind callKind) *call {
	r := g.r
	if kind == kindBashOther {
		kind = pick(r, []weighted[callKind]{{75, kindBashOther}, {12, kindBashRuleDenied}, {3, kindBashDangerous}, {10, kindBashAskRule}})
	}
	if g.hasMCP && chance(r, 0.1) {
		kind = kindMCP
		if !g.mcpLoaded && chance(r, 0.8) {
			kind = kindSearch
		}
	}
	if chance(r, 0.018) {
		kind = kindUnknown
	}
	p := g.proj
	file := oneOf(r, p.files)
	c := &call{id: g.newID(), kind: kind}
	var in []string // key, JSON value pairs
	switch kind {
	case kindRead:
		c.name = "read"
		switch x := r.Float64(); {
		case x < 0.005:
			file, c.secret = ".env", true
		case x < 0.015:
			file, c.outside = oneOf(r, []string{"/etc/hosts", "../shared/config.yaml", "/home/dev/.ssh/config"}), true
		}
		in = []string{"file_path", jsonString(file)}
		if chance(r, 0.08) {
			in = append(in, "offset", "200", "limit", "400")
		}
		c.op = "read:" + file
	case kindWrite:
		c.name = "write"
		if chance(r, 0.5) {
			file = dirOf(file) + "/" + oneOf(r, p.symbols) + "_new" + extOf(file)
		}
		if chance(r, 0.015) {
			file, c.protected = ".git/hooks/pre-commit", true
		}
		in = []string{"file_path", jsonString(file), "content", jsonString("// " + oneOf(r, p.symbols) + " ...\n")}
		c.op, c.rule, c.inRuleScope = "write:"+file, "Edit(src/**)", chance(r, 0.7)
	case kindEdit:
		c.name = "edit"
		sym := oneOf(r, p.symbols)
		in = []string{"file_path", jsonString(file), "old_string", jsonString(sym + "("), "new_string", jsonString(sym + "Checked(")}
		c.op, c.rule, c.inRuleScope = "edit:"+file, "Edit(src/**)", chance(r, 0.7)
	case kindGrep:
		c.name = "grep"
		in = []string{"pattern", jsonString(oneOf(r, p.patterns))}
		if chance(r, 0.5) {
			in = append(in, "output_mode", `"content"`)
		}
		if chance(r, 0.3) {
			in = append(in, "glob", jsonString("*"+extOf(file)))
		}
		c.op = "grep"
	case kindGlob:
		c.name = "glob"
		in = []string{"pattern", jsonString(oneOf(r, p.globs))}
		c.op = "glob"
	case kindLs:
		c.name = "ls"
		in = []string{"path", jsonString(dirOf(file))}
		c.op = "ls"
	case kindTodo:
		c.name = "todo_write"
		in = []string{"todos", `[{"content":"Fix ` + oneOf(r, p.symbols) + `","status":"in_progress"},{"content":"Run the tests","status":"pending"}]`}
		c.op = "todo"
	case kindSearch:
		c.name = "tool_search"
		in = []string{"query", `"select:mcp__github__search_issues,mcp__github__get_pull_request,mcp__github__create_issue"`}
		c.op = "tool_search"
	case kindMCP:
		t := oneOf(r, mcpTools)
		c.name = t.name
		in = []string{t.required, `"` + oneOf(r, p.symbols) + `"`}
		if t.required == "number" {
			in[1] = itoa(int64(100 + r.IntN(900)))
		}
		c.op, c.rule = "mcp:"+t.name, "mcp__github"
	case kindUnknown:
		c.name = oneOf(r, unknownTools)
		in = []string{"query", jsonString(oneOf(r, p.symbols))}
		c.op = "unknown"
	default:
		c.name = "bash"
		var cmd string
		switch kind {
		case kindBashRO:
			cmd = oneOf(r, readOnlyCommands)
		case kindBashTest:
			cmd = oneOf(r, p.tests)
			c.rule = "Bash(" + strings.Fields(cmd)[0] + ":*)"
		case kindBashRuleDenied:
			d := pick(r, ruleDenied)
			cmd, c.rule = d[0], d[1]
		case kindBashDangerous:
			cmd = oneOf(r, dangerous)
		case kindBashAskRule:
			cmd = oneOf(r, askRuled)
			c.rule = "Bash(" + strings.Join(strings.Fields(cmd)[:2], " ") + ":*)"
		default:
			cmd = oneOf(r, otherCommands)
			c.rule = "Bash(" + strings.Fields(cmd)[0] + ":*)"
		}
		in = []string{"command", jsonString(cmd)}
		if kind == kindBashTest && chance(r, 0.2) {
			in = append(in, "timeout", "600000")
		}
		c.op = "bash:" + cmd
	}
	c.spec = g.spec(c.name)
	if c.spec != nil && c.spec.required != "" && chance(r, 0.016) {
		// The model misnamed the required field: the schema check will
		// reject the call.
		c.invalid = true
		for i := 0; i < len(in); i += 2 {
			if in[i] == c.spec.required {
				in[i] = strings.TrimSuffix(in[i], "_path") + "_name"
			}
		}
	}
	c.input = object(in)
	c.safe = c.spec != nil && !c.invalid && (c.kind == kindBashRO || c.spec.readOnly && c.kind != kindTodo && c.spec.source != trajectory.ToolMCP)
	return c
}

// again repeats a call with the same input and a new id.
func (g *session) again(d *call) *call {
	c := *d
	c.id = g.newID()
	c.out, c.shown, c.done = outcome{}, nil, time.Time{}
	return &c
}

// object builds a JSON object from key and raw JSON value pairs, in order.
func object(kv []string) json.RawMessage {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(kv[i]))
		b.WriteByte(':')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

func extOf(path string) string {
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		return path[i:]
	}
	return ""
}

// failure is a way a tool run fails, with its error code.
type failure struct {
	w    float64
	code string
	text string
}

// runTool draws how a call that passed every check runs: its own
// duration, its output and, sometimes, its failure.
func (g *session) runTool(c *call) {
	r := g.r
	var (
		lat      latency
		bytes    int64
		failP    float64
		failures []failure
		timeoutP float64
		timeout  = 2 * time.Minute
		text     string
	)
	switch c.kind {
	case kindRead:
		lat, bytes, failP = latRead, min(logNormal(r, 3500, 1.0), 80_000), 0.04
		failures = []failure{{70, "ENOENT", "File does not exist."}, {10, "EISDIR", "This is a directory; use ls to list it."},
			{10, "binary", "The file is binary and cannot be shown as text."}, {10, "offset_past_end", "offset is past the end of the file."}}
		text = "     1\t" + g.proj.header + "\n     2\t\n     3\t..."
	case kindWrite:
		lat, bytes, failP = latWrite, 48, 0.01
		failures = []failure{{1, "EISDIR", "The path is a directory."}}
		text = "Wrote the file."
	case kindEdit:
		lat, bytes, failP = latEdit, 64, 0.10
		failures = []failure{{45, "not_found", "old_string was not found in the file. Read the file again and copy the text exactly."},
			{20, "not_read", "Read the file before editing it."}, {20, "ambiguous", "old_string occurs more than once; give more context or set replace_all."},
			{10, "ENOENT", "File does not exist."}, {5, "no_change", "new_string is the same as old_string."}}
		text = "Edited the file: replaced 1 occurrence."
	case kindGrep:
		lat, bytes, failP = latGrep, logNormal(r, 900, 1.6), 0.02
		failures = []failure{{1, "bad_regexp", "The pattern is not a valid RE2 regular expression."}}
		text = g.proj.files[1] + ":12:" + g.proj.symbols[0]
	case kindGlob:
		lat, bytes, failP = latGlob, logNormal(r, 500, 1.3), 0.01
		failures = []failure{{1, "bad_pattern", "The glob pattern is malformed."}}
		text = strings.Join(g.proj.files[:3], "\n")
	case kindLs:
		lat, bytes, failP = latLs, logNormal(r, 350, 0.7), 0.02
		failures = []failure{{1, "ENOENT", "Directory does not exist."}}
		text = strings.Join(g.proj.files[:4], "\n")
	case kindBashRO:
		lat, bytes, failP = latBashRO, logNormal(r, 500, 1.3), 0.05
		failures = []failure{{50, "exit:1", "exit status 1"}, {30, "exit:128", "fatal: not a git repository\nexit status 128"}, {20, "exit:2", "exit status 2"}}
		text = "On branch main\nnothing to commit, working tree clean"
	case kindBashTest:
		lat, bytes, failP, timeoutP = latBashTest, logNormal(r, 1500, 1.6), 0.30, 0.025
		failures = []failure{{80, "exit:1", "--- FAIL: Test" + g.proj.symbols[0] + " (0.01s)\n    got 3, want 4\nFAIL\nexit status 1"}, {20, "exit:2", "build failed\nexit status 2"}}
		text = "ok  \t" + g.proj.name + "\t0.412s"
		if strings.Contains(string(c.input), "600000") {
			timeout = 10 * time.Minute
		}
	case kindMCP:
		lat, bytes, failP, timeoutP = latMCP, logNormal(r, 4000, 1.2), 0.06, 0.015
		failures = []failure{{1, "mcp_error", "The MCP server returned an error: not found."}}
		text = `{"items":[{"number":412,"title":"` + g.proj.symbols[0] + ` fails on empty input"}]}`
	case kindTodo:
		lat, bytes, text = latTodo, 90, "Todo list updated."
	case kindSearch:
		lat, bytes, text = latSearch, logNormal(r, 1800, 0.4), "Loaded 3 tools: mcp__github__search_issues, mcp__github__get_pull_request, mcp__github__create_issue."
	default: // the other bash commands
		lat, bytes, failP, timeoutP = latBashOther, logNormal(r, 200, 1.5), 0.10, 0.008
		failures = []failure{{60, "exit:1", "exit status 1"}, {15, "exit:127", "command not found\nexit status 127"}, {25, "exit:128", "fatal: bad revision\nexit status 128"}}
		text = "(command succeeded with no output)"
	}
	o := outcome{dur: lat.draw(r), bytes: bytes, text: text, ran: true}
	if s, ok := g.shifts[c.name]; ok {
		o.dur = lat.stretch(o.dur, s.TailFactor)
	}
	switch x := r.Float64(); {
	case x < 0.0015:
		o.kind, o.code = trajectory.FailureException, oneOf(r, []string{"panic", "error", "error"})
		o.text = "The " + c.name + " tool failed with an internal error (a bug in the harness, not in your input). Try to reach your goal another way."
		o.bytes = 0
	case x < 0.0015+timeoutP:
		o.kind, o.code = trajectory.FailureTimeout, "timeout"
		o.dur = timeout + time.Duration(r.IntN(50))*time.Millisecond
		o.text = "Timed out after " + timeout.String() + ". If the work is expected to take long, run it with a larger timeout or in smaller steps."
	case x < 0.0015+timeoutP+failP:
		f := pick(r, weights(failures))
		o.kind, o.code, o.text = trajectory.FailureToolError, f.code, f.text
		if c.kind != kindBashTest && c.kind != kindMCP {
			o.bytes = int64(len(f.text))
		}
	}
	if c.spec.limit > 0 && o.bytes > c.spec.limit {
		o.truncated = true
		o.text += truncationNotice(o.bytes, g.id, g.spillRef(c))
	}
	g.shiftRun(c, o, 0.0015+timeoutP+failP, failures)
	if o.kind == "" && c.kind == kindSearch && !g.mcpLoaded {
		// Loading changes the tool list, and with it the cached prefix.
		g.mcpLoaded = true
		g.setTools()
		g.cacheBroken = true
	}
	c.out = o
}

func weights(fs []failure) []weighted[failure] {
	out := make([]weighted[failure], len(fs))
	for i, f := range fs {
		out[i] = weighted[failure]{f.w, f}
	}
	return out
}

// truncationNotice is what a truncated result ends with, as the executor
// writes it: the full size and where the rest is.
func truncationNotice(size int64, session, spill string) string {
	return fmt.Sprintf("\n\n[Output truncated: showing the first and last part of %d characters. The full output was saved to .retrace/runs/%s.blobs/%s; use the read tool with offset and limit to see the part you need.]",
		size, session, strings.TrimPrefix(spill, "sha256:"))
}
