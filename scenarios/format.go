package scenarios

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrInvalid is wrapped by the errors of Parse and Load for a scenario
// the user has to fix.
var ErrInvalid = errors.New("invalid scenario")

// Problem is one thing wrong in a scenario file, located at a line of the
// archive (from 1; 0 when no line applies) and, when known, a column.
type Problem struct {
	File string
	Line int
	// Col is the column (from 1) in a metric threshold; 0 when none applies.
	Col int
	Msg string
}

// Error formats the problem as file:line: what is wrong, or
// file:line:col: what is wrong.
func (p Problem) Error() string {
	if p.Line > 0 && p.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return p.File + ": " + p.Msg
}

// ProblemsError lists every problem found in a suite. It wraps ErrInvalid.
type ProblemsError struct {
	Problems []Problem
}

// Error lists the problems one a line.
func (e *ProblemsError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *ProblemsError) Unwrap() error { return ErrInvalid }

// The answers of a scripted person (Scenario.Person).
const (
	// PersonApprove answers every permission question yes.
	PersonApprove = "approve"
	// PersonDeny answers every permission question no.
	PersonDeny = "deny"
)

// Scenario is one parsed scenario.
type Scenario struct {
	// File is the archive's name as given (a path, or builtin/NAME.txtar).
	File string
	// SuitePath is the archive's path relative to the suite directory it
	// was loaded from (sub/NAME.txtar; NAME.txtar for a file given alone
	// or a built-in scenario), slash-separated: the same on every machine,
	// wherever the suite is checked out.
	SuitePath string
	// Line is the line of scenario.yaml's first line in File.
	Line int
	// Name identifies the scenario in results; unique in a suite.
	Name        string
	Description string
	Tags        []string
	// Prompt is the user's task.
	Prompt string
	// Config is the session's trusted configuration (the zero value when
	// the scenario gives none).
	Config config.Config
	// Script is the model's script, in the mock LLM's format, padded
	// with blank lines so that its lines are the archive's; each run
	// parses it again, so that runs never share a script's state.
	Script []byte
	// Live is true for `model: live`: the scenario has no script and runs
	// only against a real model (Options.Provider); without one it is
	// skipped.
	Live bool
	// Person is who answers the permission chain's questions: "" for
	// nobody (the session is headless, every ask is a denial), PersonApprove
	// or PersonDeny for a person who answers every question so (the
	// session is interactive, and an approved call is remembered).
	Person string
	// Stream asks the scripted model for streamed replies, so each tool
	// call starts as soon as its tool_use is complete;
	// BatchTools, with Stream, starts them only once the reply is whole.
	Stream, BatchTools bool
	// FollowUps are the person's next prompts, given one by
	// one each time the model finishes its turn; the session ends after
	// the last. Each is recorded as a user_prompt event.
	FollowUps []string
	// MaxTurns bounds the session's model turns (0: the config's, else
	// DefaultMaxTurns); Timeout the wall time of one run.
	MaxTurns int
	Timeout  time.Duration
	// Repeat is how many times the scenario runs (at least 1).
	Repeat int
	// Files are the workspace's starting files: path (slash-separated,
	// relative) to content.
	Files map[string][]byte
	// Expect holds the expectations.
	Expect Expect
	// Recordings, when set, make the scenario an exhibit (see Exhibit):
	// recorded trajectories checked without running the runtime.
	Recordings []Recording
	// Reference is the recording expect.divergences compares each run
	// against (section reference.jsonl); nil without one.
	Reference []byte
	// Plant, when set, is a fault planted in the requests the runtime
	// sends (see Plant).
	Plant *Plant
	// Agent, when set, is the third-party agent CLI the scenario runs
	// instead of retrace's runtime, against the mock LLM serving Script
	// (agent.go, agentrun.go).
	Agent *Agent
	// Digest is the SHA-256 of the archive's bytes, in hex: what
	// SuiteHash is made of.
	Digest string
}

// DefaultMaxTurns is the turn limit of a scenario that sets none.
const DefaultMaxTurns = 50

// DefaultTimeout bounds one run of a scenario that sets no timeout.
const DefaultTimeout = 2 * time.Minute

// sectionSpec is the name of the scenario's own section.
const sectionSpec = "scenario.yaml"

// workspacePrefix starts the names of the workspace's files.
const workspacePrefix = "workspace/"

var markerRe = regexp.MustCompile(`^-- (.+) --\r?$`)

// Parse parses one scenario archive; name is used in messages and as the
// scenario's File. Every problem is reported in a *ProblemsError.
func Parse(data []byte, name string) (*Scenario, error) {
	p := &parser{file: name}
	s := p.parse(data)
	if len(p.problems) > 0 {
		// In the order of the file, as a reader fixes them.
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &ProblemsError{Problems: p.problems}
	}
	sum := sha256.Sum256(data)
	s.Digest = hex.EncodeToString(sum[:])
	return s, nil
}

// parser collects the problems of one file.
type parser struct {
	file     string
	problems []Problem
	// exhibit says the scenario carries recordings, so that its
	// expectations may name the detectors that judge a corpus.
	exhibit bool
}

func (p *parser) addf(line int, format string, args ...any) {
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) at(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.addf(line, format, args...)
}

func (p *parser) parse(data []byte) *Scenario {
	ar := txtar.Parse(data)
	// txtar does not say where a file starts: find its marker lines, in
	// order, so that every message can name a line of the archive.
	var starts []int
	for i, l := range strings.Split(string(data), "\n") {
		if m := markerRe.FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) != "" {
			starts = append(starts, i+2)
		}
	}
	s := &Scenario{File: p.file, Files: map[string][]byte{}, Repeat: 1}
	var spec []byte
	// lines holds each workspace file's first line in the archive.
	lines := map[string]int{}
	seen := map[string]int{}
	for i, f := range ar.Files {
		line := 0
		if i < len(starts) {
			line = starts[i]
		}
		if prev, dup := seen[f.Name]; dup {
			p.addf(line-1, "section %q appears twice (first at line %d); keep one", f.Name, prev-1)
			continue
		}
		seen[f.Name] = line
		switch {
		case f.Name == sectionSpec:
			s.Line, spec = line, f.Data
		case strings.HasPrefix(f.Name, workspacePrefix):
			rel := strings.TrimPrefix(f.Name, workspacePrefix)
			if clean := path.Clean(rel); rel == "" || clean != rel || path.IsAbs(rel) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(rel, `\`) {
				p.addf(line-1, "workspace file %q: give a clean relative path inside the workspace, e.g. workspace/src/main.go", f.Name)
				continue
			}
			s.Files[rel], lines[rel] = f.Data, line
		case f.Name == sectionReference:
			p.referenceSection(s, line, f.Data)
		case p.recordingSection(s, f.Name, line, f.Data):
		default:
			p.addf(line-1, "unknown section %q: a scenario holds %s, workspace/... files and %s (an exhibit %s or %sNAME%s)", f.Name, sectionSpec, sectionReference, sectionRecording, recordingsPrefix, recordingsSuffix)
		}
	}
	for rel := range s.Files {
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if _, clash := s.Files[dir]; clash {
				p.addf(lines[rel]-1, "workspace/%s needs a directory workspace/%s, which the scenario gives as a file", rel, dir)
			}
		}
	}
	if spec == nil && s.Line == 0 {
		if bytes.HasPrefix(data, []byte("\ufeff")) {
			// An editor that saves UTF-8 with a byte-order mark puts it
			// before the first marker line, which then is no marker.
			p.addf(1, "the file starts with a byte-order mark (U+FEFF), so its first line is not the `-- %s --` marker it looks like; save the file as UTF-8 without one", sectionSpec)
			return s
		}
		p.addf(1, "no %s section: start one with a line `-- %s --`", sectionSpec, sectionSpec)
		return s
	}
	p.exhibit = s.Exhibit()
	p.spec(s, spec)
	if data, ok := s.Files[config.FileName]; ok {
		p.workspaceConfig(s, data, lines[config.FileName])
	}
	return s
}

// workspaceConfig checks the workspace's own retrace.yaml as a run will
// layer it: over the scenario's config, restrict-only, so that a file
// that asks for more is refused before anything runs.
func (p *parser) workspaceConfig(s *Scenario, data []byte, line int) {
	f, err := config.ParseFile(padded(data, line), p.file)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		p.yamlProblems(err, line, "workspace/"+config.FileName+": ")
		return
	}
	if _, refused := config.Restrict(baseConfig(s), f); len(refused) > 0 {
		for _, r := range refused {
			p.addf(r.Line, "workspace/%s may only restrict the scenario's config: %s: %s (%s); move it into config:", config.FileName, r.Field, r.Value, r.Why)
		}
	}
}

// padded returns data preceded by blank lines, so that a YAML parser's
// line numbers are the archive's.
func padded(data []byte, first int) []byte {
	return append(bytes.Repeat([]byte{'\n'}, max(first-1, 0)), data...)
}

// subdoc cuts the YAML value v out of doc (itself padded), blanking every
// line before it and the part of its first line before its column, and
// dropping everything from line end on, so that another parser reads v
// alone with the archive's line numbers.
func subdoc(doc []byte, v *yaml.Node, end int) []byte {
	lines := strings.SplitAfter(string(doc), "\n")
	var b strings.Builder
	for i, l := range lines {
		no := i + 1
		switch {
		case no < v.Line:
			b.WriteByte('\n')
		case end > 0 && no >= end:
			return []byte(b.String())
		case no == v.Line:
			col := min(max(v.Column-1, 0), len(l))
			b.WriteString(strings.Repeat(" ", col))
			b.WriteString(l[col:])
		default:
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}

var yamlLineRe = regexp.MustCompile(`line (\d+): (.*)`)

// yamlProblems turns a YAML error into problems at its lines.
func (p *parser) yamlProblems(err error, fallback int, prefix string) {
	msg := err.Error()
	found := false
	for _, l := range strings.Split(msg, "\n") {
		if m := yamlLineRe.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			p.addf(n, "%s%s", prefix, m[2])
			found = true
		}
	}
	if !found {
		p.addf(fallback, "%s%s", prefix, strings.TrimPrefix(msg, "yaml: "))
	}
}

var specKeys = []string{"name", "description", "tags", "prompt", "repeat", "limits", "config", "model", "person", "stream", "batch_tools", "follow_ups", "expect", "agent", "plant"}

func (p *parser) spec(s *Scenario, data []byte) {
	doc := padded(data, s.Line)
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		p.yamlProblems(err, s.Line, "scenario.yaml is not valid YAML: ")
		return
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		p.addf(s.Line, "scenario.yaml must be a mapping with at least prompt: and model:")
		return
	}
	m := root.Content[0]
	fields := p.fields(m, "scenario.yaml", specKeys...)
	has := map[string]int{}
	for _, f := range fields {
		has[f.name] = f.key.Line
	}
	s.Name = strings.TrimSuffix(filepath.Base(s.File), ".txtar")
	var hasPrompt, hasModel bool
	for i, f := range fields {
		// A value ends where the next key starts.
		end := 0
		if i+1 < len(fields) {
			end = fields[i+1].key.Line
		}
		cut := func() []byte {
			if m.Style&yaml.FlowStyle == 0 && (end == 0 || end > f.val.Line) {
				return subdoc(doc, f.val, end)
			}
			// In a flow mapping the value shares its lines with other
			// keys: encode it alone, starting at its line.
			out, err := yaml.Marshal(f.val)
			if err != nil {
				return nil
			}
			return padded(out, f.val.Line)
		}
		switch f.name {
		case "name":
			s.Name = p.str(f.val, "name")
			if !trajectory.IsLabel(s.Name) {
				p.at(f.val, "name %q: want 1 to 64 of A-Z a-z 0-9 _ . : -, starting with a letter or digit", s.Name)
			}
		case "description":
			s.Description = p.str(f.val, "description")
		case "tags":
			s.Tags = p.strs(f.val, "tags")
			for _, t := range s.Tags {
				if !trajectory.IsLabel(t) {
					p.at(f.val, "tag %q: want 1 to 64 of A-Z a-z 0-9 _ . : -, starting with a letter or digit", t)
				}
			}
		case "prompt":
			hasPrompt = true
			if s.Prompt = p.str(f.val, "prompt"); strings.TrimSpace(s.Prompt) == "" && f.val.Kind == yaml.ScalarNode {
				p.at(f.val, "prompt is empty: give the user's task")
			}
		case "repeat":
			if s.Repeat = p.integer(f.val, "repeat"); s.Repeat < 1 {
				p.at(f.val, "repeat must be at least 1")
			}
		case "limits":
			p.limits(s, f.val)
		case "config":
			cfg, err := config.Parse(cut(), p.file)
			if err != nil {
				// config.Parse wraps the YAML error, which has the lines.
				if inner := errors.Unwrap(err); inner != nil {
					err = inner
				}
				p.yamlProblems(err, f.val.Line, "config: ")
				break
			}
			s.Config = cfg
			if _, _, err := cfg.Check(p.file, os.TempDir()); err != nil {
				p.at(f.val, "%v", err)
			}
		case "model":
			hasModel = true
			if f.val.Kind == yaml.ScalarNode && f.val.Value == "" {
				p.at(f.val, "model is empty: give a script of turns, e.g. `model: {turns: [{content: [{text: Done.}]}]}`")
				break
			}
			if f.val.Kind == yaml.ScalarNode && f.val.Value == "live" {
				s.Live = true
				break
			}
			if f.val.Kind == yaml.ScalarNode {
				p.at(f.val, "model: %q is not supported; give a script of turns, or `model: live` for a scenario that runs only with retrace eval --provider", f.val.Value)
				break
			}
			s.Script = cut()
			if _, err := mockllm.ParseScript(s.Script, p.file); err != nil {
				var se *mockllm.ScriptError
				if errors.As(err, &se) {
					p.addf(se.Line, "model: %s", se.Msg)
				} else {
					p.at(f.val, "model: %v", err)
				}
			}
		case "person":
			s.Person = p.str(f.val, "person")
			if s.Person != PersonApprove && s.Person != PersonDeny {
				p.at(f.val, "person %q: want %s (every question answered yes) or %s (every one no); leave it out for a headless session", s.Person, PersonApprove, PersonDeny)
			}
		case "stream":
			s.Stream = p.boolean(f.val, "stream")
		case "batch_tools":
			s.BatchTools = p.boolean(f.val, "batch_tools")
		case "follow_ups":
			s.FollowUps = p.strs(f.val, "follow_ups")
			for i, u := range s.FollowUps {
				if strings.TrimSpace(u) == "" {
					p.at(f.val.Content[i], "follow_ups entry %d is empty: give the person's next prompt", i+1)
				}
			}
		case "expect":
			s.Expect = p.expect(f.val, s)
		case "agent":
			s.Agent = p.agent(f.val)
		case "plant":
			p.plant(s, f.val)
		}
	}
	if s.Agent != nil {
		p.agentSpec(s, has)
	}
	if s.Exhibit() {
		p.checkExhibit(s, has)
		return
	}
	if !hasPrompt {
		p.at(m, "no prompt: give the user's task, e.g. `prompt: Fix the failing test.`")
	}
	if !hasModel {
		p.at(m, "no model: give a script of turns, e.g. `model: {turns: [{content: [{text: Done.}]}]}`")
	}
}

func (p *parser) limits(s *Scenario, n *yaml.Node) {
	for _, f := range p.fields(n, "limits", "max_turns", "timeout") {
		switch f.name {
		case "max_turns":
			if s.MaxTurns = p.integer(f.val, "limits.max_turns"); s.MaxTurns < 1 {
				p.at(f.val, "limits.max_turns must be at least 1")
			}
		case "timeout":
			d, err := time.ParseDuration(p.str(f.val, "limits.timeout"))
			if err != nil || d <= 0 {
				p.at(f.val, "limits.timeout %q: want a positive duration such as 30s", f.val.Value)
			}
			s.Timeout = d
		}
	}
}

// field is one key of a mapping and its value.
type field struct {
	name     string
	key, val *yaml.Node
}

// fields returns a mapping's entries, reporting keys that are unknown or
// repeated, so that a typo never drops an expectation.
func (p *parser) fields(n *yaml.Node, what string, known ...string) []field {
	if n.Kind != yaml.MappingNode {
		p.at(n, "%s must be a mapping with keys %s", what, strings.Join(known, ", "))
		return nil
	}
	var out []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			p.at(k, "%s: unknown key %q; the keys are %s", what, k.Value, strings.Join(known, ", "))
		case seen[k.Value]:
			p.at(k, "%s: key %q appears twice", what, k.Value)
		default:
			seen[k.Value] = true
			out = append(out, field{name: k.Value, key: k, val: v})
		}
	}
	return out
}

func (p *parser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.at(n, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (p *parser) strs(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode {
		p.at(n, "%s must be a list of strings", what)
		return nil
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, p.str(c, what+" entry"))
	}
	return out
}

func (p *parser) integer(n *yaml.Node, what string) int {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.Atoi(n.Value); err == nil {
			return v
		}
	}
	p.at(n, "%s must be a whole number, got %q", what, n.Value)
	return 0
}

func (p *parser) boolean(n *yaml.Node, what string) bool {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		v, err := strconv.ParseBool(n.Value)
		if err == nil {
			return v
		}
	}
	p.at(n, "%s must be true or false, got %q", what, n.Value)
	return false
}

// Load reads the scenarios at paths: .txtar files, and directories read
// for their .txtar files (recursively, in name order). Every problem of
// every file is reported in one *ProblemsError, as are two scenarios of
// one name.
func Load(paths ...string) ([]*Scenario, error) {
	var files []string
	rels := map[string]string{} // a file's path relative to its directory argument
	var probs []Problem
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			probs = append(probs, Problem{File: p, Msg: "cannot read it: " + errors.Unwrap(err).Error()})
			continue
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(f, ".txtar") {
				// A named pipe in the directory would block the read
				// until a writer came, past Ctrl-C (a blocked open is not
				// interrupted): only regular files are read. One named
				// on the command line is read as the stream it is (<(…)).
				if info, serr := os.Stat(f); serr == nil && !info.Mode().IsRegular() {
					probs = append(probs, Problem{File: f, Msg: "not a regular file but " + fileKind(info.Mode()) + ": a scenario is a .txtar file"})
					return nil
				}
				found = append(found, f)
				if rel, err := filepath.Rel(p, f); err == nil {
					rels[f] = filepath.ToSlash(rel)
				}
			}
			return err
		})
		if err != nil {
			probs = append(probs, Problem{File: p, Msg: err.Error()})
		}
		if len(found) == 0 && err == nil {
			probs = append(probs, Problem{File: p, Msg: "no .txtar scenarios in this directory"})
		}
		files = append(files, found...)
	}
	sources := make([]source, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			probs = append(probs, Problem{File: f, Msg: err.Error()})
			continue
		}
		sources = append(sources, source{name: f, data: data, rel: rels[f]})
	}
	out, err := parseAll(sources)
	var pe *ProblemsError
	if errors.As(err, &pe) {
		probs = append(probs, pe.Problems...)
	}
	if len(probs) > 0 {
		return nil, &ProblemsError{Problems: probs}
	}
	return out, nil
}

// fileKind names what a file that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "something else"
}

// source is one archive to parse.
type source struct {
	name string
	data []byte
	// rel is the file's path relative to its suite directory.
	rel string
}

// parseAll parses every source, gathering every problem, and refuses two
// scenarios of one name.
func parseAll(sources []source) ([]*Scenario, error) {
	var out []*Scenario
	var probs []Problem
	names := map[string]*Scenario{}
	for _, src := range sources {
		s, err := Parse(src.data, src.name)
		var pe *ProblemsError
		if errors.As(err, &pe) {
			probs = append(probs, pe.Problems...)
			continue
		}
		if prev, dup := names[s.Name]; dup {
			probs = append(probs, Problem{File: s.File, Line: s.Line, Msg: fmt.Sprintf("scenario name %q is taken by %s; names must be unique in a suite", s.Name, prev.File)})
			continue
		}
		names[s.Name] = s
		s.SuitePath = cmp.Or(src.rel, path.Base(filepath.ToSlash(src.name)))
		out = append(out, s)
	}
	if len(probs) > 0 {
		return nil, &ProblemsError{Problems: probs}
	}
	return out, nil
}
