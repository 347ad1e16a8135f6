package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/retrace-dev/retrace/trajectory"
)

// ErrInvalidTool is wrapped by NewRegistry's errors for a tool that cannot
// be registered: a bad or duplicate name, or a schema that is not a JSON
// object.
var ErrInvalidTool = errors.New("invalid tool")

// entry is a registered tool with its Spec, read once: Spec must return the
// same value every time, and the registry is asked for it on every turn.
type entry struct {
	tool Tool
	spec Spec
	// words are the lower-case words of the name, for Search.
	words []string
	// descWords are the lower-case words of the description, for Search.
	descWords map[string]bool
}

// Registry is the session's set of tools and which deferred ones the model
// has loaded. It is safe for concurrent use.
type Registry struct {
	// entries and byName grow with Add; mu guards them and the rest.
	entries []entry // registration order
	byName  map[string]int

	mu        sync.RWMutex
	activated []int // indexes of loaded deferred tools, in activation order
	pending   func() []string
}

// NewRegistry registers tools in the given order, which is the order their
// definitions are sent in. Every name must be unique and match
// ^[a-zA-Z0-9_-]{1,64}$, and every schema must be a JSON object.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]int, len(tools))}
	for i, t := range tools {
		if err := r.add(t, i); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers more tools after the session started: the tools of an MCP
// server that finished connecting. They come after every tool registered
// before, so the definitions already sent keep their order.
func (r *Registry) Add(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		if err := r.add(t, len(r.entries)); err != nil {
			return err
		}
	}
	return nil
}

// AddMissing is Add for the tools whose names are not registered yet; the
// others are skipped, in one step, so two goroutines offering the same
// server's tools never register one twice. It returns the names added.
func (r *Registry) AddMissing(tools ...Tool) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var added []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		if _, ok := r.byName[t.Spec().Name]; ok {
			continue
		}
		if err := r.add(t, len(r.entries)); err != nil {
			return added, err
		}
		added = append(added, t.Spec().Name)
	}
	return added, nil
}

// add registers one tool; the caller holds the lock or owns r.
func (r *Registry) add(t Tool, i int) error {
	if t == nil {
		return fmt.Errorf("tool %d is nil: %w", i, ErrInvalidTool)
	}
	s := t.Spec()
	if !trajectory.IsToolName(s.Name) {
		return fmt.Errorf("tool %d: name %q must match ^[a-zA-Z0-9_-]{1,64}$: %w", i, s.Name, ErrInvalidTool)
	}
	if _, dup := r.byName[s.Name]; dup {
		return fmt.Errorf("tool %q is registered twice; rename or drop one of them: %w", s.Name, ErrInvalidTool)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(s.Schema, &obj); err != nil || obj == nil {
		return fmt.Errorf("tool %q: input schema is not a JSON object: %w", s.Name, ErrInvalidTool)
	}
	r.byName[s.Name] = len(r.entries)
	r.entries = append(r.entries, entry{tool: t, spec: s, words: nameWords(s.Name), descWords: wordSet(s.Description)})
	return nil
}

// SetPending gives the registry a way to learn which tool sources (MCP
// servers) are still connecting. A tool of theirs is not "missing" but
// "not here yet", and the model must be told the difference.
func (r *Registry) SetPending(pending func() []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = pending
}

// Pending returns the tool sources still connecting, or nil.
func (r *Registry) Pending() []string {
	r.mu.RLock()
	f := r.pending
	r.mu.RUnlock()
	if f == nil {
		return nil
	}
	return f()
}

// Lookup returns the tool called name, loaded or not.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.byName[name]
	if !ok {
		return nil, false
	}
	return r.entries[i].tool, true
}

// IsLoaded reports whether the tool called name is sent to the model: a
// tool that is not deferred always is, a deferred one once activated. An
// unknown name is not loaded.
func (r *Registry) IsLoaded(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.byName[name]
	if !ok {
		return false
	}
	return !r.entries[i].spec.Deferred || slices.Contains(r.activated, i)
}

// Activate loads the named deferred tools, so that Active includes them
// from now on. Unknown names, tools that are not deferred and tools
// already loaded are ignored, so activating twice is harmless.
func (r *Registry) Activate(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range names {
		i, ok := r.byName[name]
		if !ok || !r.entries[i].spec.Deferred || slices.Contains(r.activated, i) {
			continue
		}
		r.activated = append(r.activated, i)
	}
}

// Active returns the tools to send to the model this turn: the tools that
// are not deferred in registration order, then the activated deferred
// tools in activation order. Loading a tool only appends to the list, so
// the cached prefix of earlier definitions stays byte-identical.
func (r *Registry) Active() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.entries))
	for _, e := range r.entries {
		if !e.spec.Deferred {
			out = append(out, e.tool)
		}
	}
	for _, i := range r.activated {
		out = append(out, r.entries[i].tool)
	}
	return out
}

// Deferred returns the deferred tools not loaded yet, in registration order.
func (r *Registry) Deferred() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	for i, e := range r.entries {
		if e.spec.Deferred && !slices.Contains(r.activated, i) {
			out = append(out, e.tool)
		}
	}
	return out
}

// All returns every registered tool in registration order.
func (r *Registry) All() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.tool
	}
	return out
}

// Scores of Search. A hit in the name is a far stronger signal than a hit
// in the description, and the whole name is stronger still.
const (
	scoreWholeName = 100
	scoreNameWord  = 10
	scoreDescWord  = 2
)

// Search finds tools for tool_search.
//
// "select:NAME[,NAME…]" returns the registered tools with exactly those
// names, loaded or not, in the order given, skipping unknown ones and
// ignoring max: the model asked for each of them.
//
// Any other query searches only the deferred tools not loaded yet — the
// model already has the others' definitions, and listing them would crowd
// out the tools it is looking for. The query is split into words, and each
// word is matched, case
// insensitively and on word boundaries, against the words of a tool's name
// (split on _, - and camel case, so "create issue" finds
// mcp__github__create_issue) and of its description; "read" therefore does
// not match "already". A word written "+word" must match for a tool to be
// returned. Name hits rank above description hits; ties keep registration
// order. At most max tools are returned; max <= 0 means no limit.
func (r *Registry) Search(query string, max int) []Tool {
	query = strings.TrimSpace(query)
	if rest, ok := strings.CutPrefix(query, "select:"); ok {
		return r.selectNames(rest)
	}
	required, optional := queryWords(query)
	if len(required)+len(optional) == 0 {
		return nil
	}
	whole := strings.ToLower(query)
	type hit struct {
		i, score int
	}
	var hits []hit
	r.mu.RLock()
	defer r.mu.RUnlock()
	for i, e := range r.entries {
		if !e.spec.Deferred || slices.Contains(r.activated, i) {
			continue
		}
		score, ok := 0, true
		if strings.ToLower(e.spec.Name) == whole {
			score += scoreWholeName
		}
		for _, w := range required {
			s := e.wordScore(w)
			if s == 0 {
				ok = false
				break
			}
			score += s
		}
		if !ok {
			continue
		}
		for _, w := range optional {
			score += e.wordScore(w)
		}
		if score > 0 {
			hits = append(hits, hit{i, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score })
	if max > 0 && len(hits) > max {
		hits = hits[:max]
	}
	out := make([]Tool, len(hits))
	for k, h := range hits {
		out[k] = r.entries[h.i].tool
	}
	return out
}

func (r *Registry) selectNames(list string) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Tool
	seen := map[int]bool{}
	for name := range strings.SplitSeq(list, ",") {
		i, ok := r.byName[strings.TrimSpace(name)]
		if !ok || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, r.entries[i].tool)
	}
	return out
}

func (e entry) wordScore(w string) int {
	score := 0
	if slices.Contains(e.words, w) {
		score += scoreNameWord
	}
	if e.descWords[w] {
		score += scoreDescWord
	}
	return score
}

// queryWords splits a search query into the words that must match (written
// "+word") and the others. Each term is split like a tool name, so
// "create_issue" and "createIssue" both mean the words create and issue.
func queryWords(query string) (required, optional []string) {
	for term := range strings.FieldsSeq(query) {
		must := false
		if rest, ok := strings.CutPrefix(term, "+"); ok {
			must, term = true, rest
		}
		for _, w := range nameWords(term) {
			if must {
				required = append(required, w)
			} else if !slices.Contains(optional, w) {
				optional = append(optional, w)
			}
		}
	}
	return required, optional
}

// nameWords splits an identifier into lower-case words: on every rune that
// is not a letter or digit, and at camel-case humps ("readFile" → read,
// file; "HTTPServer" → http, server).
func nameWords(s string) []string {
	var words []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, c := range rs {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		lowerToUpper := unicode.IsUpper(c) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
		acronymEnd := unicode.IsUpper(c) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return words
}

// wordSet returns the lower-case words of a text, split on every rune that
// is not a letter or digit, so that snake_case and camelCase names split into words.
func wordSet(text string) map[string]bool {
	set := map[string]bool{}
	for w := range strings.FieldsFuncSeq(text, func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c)
	}) {
		set[strings.ToLower(w)] = true
	}
	return set
}
