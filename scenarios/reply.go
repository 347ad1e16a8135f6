package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/retrace-dev/retrace/trajectory"
)

// ReplyExpect is what the text of one model reply must be: by default
// the final reply (the last model_response that holds text), or the
// reply of model turn Turn.
type ReplyExpect struct {
	Place
	// Turn, when above 0, selects the reply of that model turn (the last
	// response recorded in the turn); 0 selects the final reply.
	Turn int
	// Equals is the whole text, compared with surrounding white space
	// trimmed on both sides.
	Equals *string
	// Contains and Matches check the text.
	Contains []string
	Matches  []*regexp.Regexp
	// Schema, when set, is a JSON Schema the text must be a JSON
	// document valid against; SchemaSource is the schema as written.
	Schema       *jsonschema.Schema
	SchemaSource string
}

// reply reads expect.reply: one mapping, or a list of them, each with an
// optional turn.
func (p *parser) reply(n *yaml.Node) []ReplyExpect {
	if n.Kind == yaml.SequenceNode {
		var out []ReplyExpect
		for i, c := range n.Content {
			out = append(out, p.reply1(c, fmt.Sprintf("expect.reply[%d]", i)))
		}
		return out
	}
	return []ReplyExpect{p.reply1(n, "expect.reply")}
}

func (p *parser) reply1(n *yaml.Node, where string) ReplyExpect {
	r := ReplyExpect{Place: p.place(n, where)}
	checks := 0
	for _, f := range p.fields(n, where, "turn", "equals", "contains", "matches", "json_schema") {
		key := where + "." + f.name
		switch f.name {
		case "turn":
			if r.Turn = p.integer(f.val, key); r.Turn < 1 && f.val.Tag == "!!int" {
				p.at(f.val, "%s must be a model turn from 1 (leave it out for the final reply)", key)
			}
		case "equals":
			v := p.str(f.val, key)
			r.Equals = &v
			checks++
		case "contains":
			r.Contains = p.strOrList(f.val, key)
			checks++
		case "matches":
			for _, src := range p.strOrList(f.val, key) {
				re, err := regexp.Compile(src)
				if err != nil {
					p.at(f.val, "%s %q: %v", key, src, err)
					continue
				}
				r.Matches = append(r.Matches, re)
			}
			checks++
		case "json_schema":
			r.Schema, r.SchemaSource = p.jsonSchema(f.val, key)
			checks++
		}
	}
	if checks == 0 && n.Kind == yaml.MappingNode {
		p.at(n, "%s: nothing to check: give equals, contains, matches or json_schema", where)
	}
	return r
}

// jsonSchema compiles a JSON Schema written as YAML (a mapping) or as a
// string of JSON.
func (p *parser) jsonSchema(n *yaml.Node, key string) (*jsonschema.Schema, string) {
	var raw []byte
	switch n.Kind {
	case yaml.MappingNode:
		var v any
		if err := n.Decode(&v); err != nil {
			p.at(n, "%s: %v", key, err)
			return nil, ""
		}
		b, err := json.Marshal(v)
		if err != nil {
			p.at(n, "%s: %v", key, err)
			return nil, ""
		}
		raw = b
	case yaml.ScalarNode:
		raw = []byte(p.str(n, key))
	default:
		p.at(n, "%s must be a JSON Schema: a mapping such as {type: object, required: [status]}, or a string of JSON", key)
		return nil, ""
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		p.at(n, "%s is not JSON: %v", key, err)
		return nil, ""
	}
	c := jsonschema.NewCompiler()
	const url = "scenario://reply.json"
	if err := c.AddResource(url, doc); err != nil {
		p.at(n, "%s: %v", key, err)
		return nil, ""
	}
	s, err := c.Compile(url)
	if err != nil {
		p.at(n, "%s does not compile: %v", key, err)
		return nil, ""
	}
	return s, string(raw)
}

// replyText returns the text of the reply r selects and the response
// that holds it; ok is false when there is none.
func replyText(r ReplyExpect, rec *recording) (string, located, bool) {
	var found located
	ok := false
	for _, ev := range rec.events {
		mr, isResp := ev.Payload.(*trajectory.ModelResponse)
		if !isResp {
			continue
		}
		text := responseText(mr)
		switch {
		case r.Turn > 0 && ev.Turn == r.Turn:
			found, ok = ev, true
		case r.Turn == 0 && text != "":
			found, ok = ev, true
		}
	}
	if !ok {
		return "", found, false
	}
	return responseText(found.Payload.(*trajectory.ModelResponse)), found, true
}

// responseText joins the text blocks of a response (not its thinking).
func responseText(mr *trajectory.ModelResponse) string {
	var parts []string
	for _, b := range mr.Content {
		if b.Type == trajectory.BlockText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// shown is a text as a failure message shows it: trimmed, shortened,
// escaped for a terminal on one line (package terminal: a newline is \n,
// a control character cannot reach the terminal) and quoted.
func shown(s string) string { return `"` + terminal.Line(clip(strings.TrimSpace(s))) + `"` }

// what names the reply r selects, for messages.
func (r ReplyExpect) what() string {
	if r.Turn > 0 {
		return fmt.Sprintf("the reply of turn %d", r.Turn)
	}
	return "the final reply"
}

func checkReply(r ReplyExpect, rec *recording) []results.Failure {
	text, ev, ok := replyText(r, rec)
	if !ok {
		at := ""
		if rec.end != nil {
			at = rec.at(*rec.end)
		}
		got := "the model gave no text reply"
		if r.Turn > 0 {
			got = fmt.Sprintf("the session has no model response in turn %d", r.Turn)
		}
		return []results.Failure{failf(r.Place, r.what()+" is checked", at, "%s", got)}
	}
	at := rec.at(ev)
	var out []results.Failure
	if r.Equals != nil && strings.TrimSpace(text) != strings.TrimSpace(*r.Equals) {
		out = append(out, failf(r.Place, fmt.Sprintf("%s equals %s", r.what(), shown(*r.Equals)), at, "%s", shown(text)))
	}
	for _, c := range r.Contains {
		if !strings.Contains(text, c) {
			out = append(out, failf(r.Place, fmt.Sprintf("%s contains %s", r.what(), shown(c)), at, "%s", shown(text)))
		}
	}
	for _, re := range r.Matches {
		if !re.MatchString(text) {
			out = append(out, failf(r.Place, fmt.Sprintf("%s matches /%s/", r.what(), terminal.Line(re.String())), at, "%s", shown(text)))
		}
	}
	if r.Schema != nil {
		if msg := schemaProblem(r.Schema, text); msg != "" {
			out = append(out, failf(r.Place, r.what()+" is JSON valid against expect.reply.json_schema", at, "%s: %s", terminal.Line(msg), shown(text)))
		}
	}
	return out
}

// fence matches a reply that is one Markdown code block, as models often
// wrap the JSON they were asked for.
var fence = regexp.MustCompile("(?s)^```[A-Za-z0-9_-]*\\s*\n(.*?)\n?```$")

// schemaProblem says why text is not a JSON document valid against s,
// or "" when it is. A reply that is one fenced code block is judged by
// the block's content.
func schemaProblem(s *jsonschema.Schema, text string) string {
	body := strings.TrimSpace(text)
	if m := fence.FindStringSubmatch(body); m != nil {
		body = m[1]
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		return "it is not JSON (" + err.Error() + ")"
	}
	if err := s.Validate(v); err != nil {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	return ""
}
