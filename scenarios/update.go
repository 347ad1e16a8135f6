package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// GoldenTag marks a golden scenario: one whose expectations --update may
// rewrite from what its runs did.
const GoldenTag = "golden"

// maxEquals is the largest file content an update writes as equals:;
// a larger or binary file is only said to exist.
const maxEquals = 2048

// observed is what one run did, as an update writes it down.
type observed struct {
	reason   trajectory.EndReason
	exitCode int
	turns    int
	tools    map[string]int
	// files holds the workspace paths the run created, changed or
	// deleted (nil content), against the scenario's files.
	files map[string][]byte
}

// same reports whether two runs did the same.
func (o *observed) same(p *observed) bool {
	return o.reason == p.reason && o.exitCode == p.exitCode && o.turns == p.turns &&
		maps.Equal(o.tools, p.tools) && maps.EqualFunc(o.files, p.files, func(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) })
}

// Golden records what the runs of golden scenarios did, through
// Options.AfterRun, so that Update can rewrite their expectations.
type Golden struct {
	mu   sync.Mutex
	runs map[*Scenario][]*observed
	errs map[*Scenario]error
}

// NewGolden returns an empty recorder.
func NewGolden() *Golden {
	return &Golden{runs: map[*Scenario][]*observed{}, errs: map[*Scenario]error{}}
}

// AfterRun records a run of a golden scenario; it is an Options.AfterRun.
func (g *Golden) AfterRun(s *Scenario, repeat int, ws string, res results.RunResult) {
	if !slices.Contains(s.Tags, GoldenTag) {
		return
	}
	o, err := observe(s, ws, res)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.errs[s] = err
		return
	}
	g.runs[s] = append(g.runs[s], o)
}

func observe(s *Scenario, ws string, res results.RunResult) (*observed, error) {
	o := &observed{reason: res.Reason, exitCode: res.ExitCode, turns: res.Turns, tools: map[string]int{}, files: map[string][]byte{}}
	rec, err := readRecording(res.Trajectory)
	if err != nil {
		return nil, err
	}
	for _, ev := range rec.events {
		if tc, ok := ev.Payload.(*trajectory.ToolCall); ok {
			o.tools[tc.Tool]++
		}
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if start, ok := s.Files[rel]; !ok || !bytes.Equal(start, data) {
			o.files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the workspace after the run: %w", err)
	}
	for rel := range s.Files {
		if !seen[rel] {
			o.files[rel] = nil
		}
	}
	return o, nil
}

// UpdateResult says what Update did with one golden scenario.
type UpdateResult struct {
	Name, File string
	// Updated says the file was rewritten; when false and Refused is
	// empty, its expectations already said what happened.
	Updated bool
	// Refused says why the scenario was left alone.
	Refused string
	// What lists the parts rewritten, for the message.
	What string
}

// Update rewrites, in its file, the expectations of each golden scenario
// of suite from what its runs did: expect.outcome (reason, exit code,
// turns), one {tool_called: T, count: N} per tool in expect.events (in
// place of the plain tool_called counts there were; other events are
// kept) and, in expect.files, an entry per file the run created, changed
// or deleted (in place of the entries for those paths). Comments and the
// rest of the archive are kept; the YAML is re-indented as yaml.v3
// writes it. A scenario that errored, whose runs did different things, or
// that is built in is refused. The rewritten file must parse.
func (g *Golden) Update(suite []*Scenario, res *results.Results) []UpdateResult {
	var out []UpdateResult
	byName := map[string]results.ScenarioResult{}
	for _, sr := range res.Scenarios {
		byName[sr.Name] = sr
	}
	for _, s := range sorted(suite) {
		if !slices.Contains(s.Tags, GoldenTag) {
			continue
		}
		sr := byName[s.Name]
		u := UpdateResult{Name: s.Name, File: s.File}
		runs, err := g.runs[s], g.errs[s]
		switch {
		case sr.Verdict == results.VerdictError:
			u.Refused = "it errored; fix what stops it from running first"
		case err != nil:
			u.Refused = err.Error()
		case len(runs) != len(sr.Runs) || len(runs) == 0:
			u.Refused = "not every run was recorded"
		case strings.HasPrefix(s.File, BuiltinDir+"/"):
			u.Refused = "a built-in scenario is not a file to rewrite"
		}
		for _, o := range runs[min(1, len(runs)):] {
			if u.Refused == "" && !o.same(runs[0]) {
				u.Refused = "its runs did different things (flaky); make it deterministic first"
			}
		}
		if u.Refused == "" {
			u.Updated, u.What, err = rewrite(s, runs[0])
			if err != nil {
				u.Refused = err.Error()
			}
		}
		out = append(out, u)
	}
	return out
}

// rewrite edits s's file to expect what o did.
func rewrite(s *Scenario, o *observed) (bool, string, error) {
	data, err := os.ReadFile(s.File)
	if err != nil {
		return false, "", err
	}
	ar := txtar.Parse(data)
	idx := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == sectionSpec })
	if idx < 0 {
		return false, "", errors.New("no scenario.yaml section")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(ar.Files[idx].Data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return false, "", fmt.Errorf("scenario.yaml does not read back: %v", err)
	}
	expect := mapValue(root.Content[0], "expect", func() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} })
	if expect.Kind != yaml.MappingNode {
		return false, "", errors.New("expect is not a mapping")
	}
	// Block style, so that the entries below get lines of their own.
	expect.Style &^= yaml.FlowStyle

	outcome := flowMap("reason", string(o.reason), "exit_code", fmt.Sprint(o.exitCode), "turns", fmt.Sprint(o.turns))
	setMapValue(expect, "outcome", outcome)

	events := mapValue(expect, "events", func() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode} })
	var tools []*yaml.Node
	for _, t := range slices.Sorted(maps.Keys(o.tools)) {
		tools = append(tools, flowMap("tool_called", t, "count", fmt.Sprint(o.tools[t])))
	}
	replaceEntries(events, tools, func(n *yaml.Node) bool {
		// The plain counts of a tool are the update's own; a call with
		// an input matcher is a person's, and stays.
		return hasKey(n, "tool_called") && !hasKey(n, "input") && !hasKey(n, "input_matches")
	})

	var files []*yaml.Node
	for _, p := range slices.Sorted(maps.Keys(o.files)) {
		files = append(files, fileEntry(p, o.files[p]))
	}
	if mapValue(expect, "files", nil) != nil || len(files) > 0 {
		seq := mapValue(expect, "files", func() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode} })
		replaceEntries(seq, files, func(n *yaml.Node) bool {
			p := mapValue(n, "path", nil)
			_, changed := o.files[pathOf(p)]
			return changed
		})
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return false, "", err
	}
	if err := enc.Close(); err != nil {
		return false, "", err
	}
	what := fmt.Sprintf("outcome, %s, %s", count(len(tools), "tool count"), count(len(files), "file"))
	if bytes.Equal(buf.Bytes(), ar.Files[idx].Data) {
		return false, what, nil
	}
	ar.Files[idx].Data = buf.Bytes()
	updated := txtar.Format(ar)
	if _, err := Parse(updated, s.File); err != nil {
		return false, "", fmt.Errorf("the rewritten scenario would not parse (left alone): %v", err)
	}
	if bytes.Equal(updated, data) {
		return false, what, nil
	}
	info, err := os.Stat(s.File)
	if err != nil {
		return false, "", err
	}
	if err := os.WriteFile(s.File, updated, info.Mode().Perm()); err != nil {
		return false, "", err
	}
	return true, what, nil
}

func pathOf(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "\x00"
	}
	return n.Value
}

func hasKey(n *yaml.Node, key string) bool {
	return n.Kind == yaml.MappingNode && mapValue(n, key, nil) != nil
}

// mapValue returns the value of key in mapping m; when there is none it
// adds the one add returns (nil: adds nothing and returns nil).
func mapValue(m *yaml.Node, key string, add func() *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	if add == nil {
		return nil
	}
	v := add()
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// setMapValue sets key in m to v, keeping the comments of the value it
// replaces.
func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			old := m.Content[i+1]
			v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// replaceEntries drops the entries of sequence seq that owned reports,
// and puts add where the first of them was (else at the end).
func replaceEntries(seq *yaml.Node, add []*yaml.Node, owned func(*yaml.Node) bool) {
	seq.Style &^= yaml.FlowStyle
	var kept []*yaml.Node
	at := -1
	for _, n := range seq.Content {
		if owned(n) {
			if at < 0 {
				at = len(kept)
			}
			continue
		}
		kept = append(kept, n)
	}
	if at < 0 {
		at = len(kept)
	}
	seq.Content = slices.Concat(kept[:at], add, kept[at:])
}

// flowMap builds {k1: v1, k2: v2}; the values are written as YAML
// resolves them (numbers stay numbers).
func flowMap(kv ...string) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[i]}, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[i+1]})
	}
	return m
}

// fileEntry is the expectation of one file the run created, changed or
// deleted (content nil).
func fileEntry(p string, content []byte) *yaml.Node {
	path := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}
	key := func(k string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k} }
	switch {
	case content == nil:
		return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{key("path"), path, key("exists"), {Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}}}
	case len(content) > maxEquals || !utf8.Valid(content) || bytes.ContainsRune(content, 0):
		return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{key("path"), path, key("exists"), {Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}}}
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(content)}
	if strings.Contains(v.Value, "\n") {
		v.Style = yaml.LiteralStyle
	}
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key("path"), path, key("equals"), v}}
}

// count says n things: "1 file", "2 files".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
