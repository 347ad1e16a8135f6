package compare

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PathRewrite replaces Old with New in every compared string, so that a
// path that is only different because the replay ran elsewhere (the
// workspace root, a blob directory) reads the same on both sides.
type PathRewrite struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Scope names a kind of text a Rule rewrites. The set is closed.
type Scope string

// The scopes.
const (
	// ScopeToolOutput is a tool_result's text, both as its event and as the
	// tool_result block the next model request carries.
	ScopeToolOutput Scope = "tool_output"
	// ScopeToolInput is a call's input: the tool_call event's and the
	// tool_use block's.
	ScopeToolInput Scope = "tool_input"
	// ScopeModelText is everything the model reads or writes that is not a
	// tool's: the system prompt and the text and thinking of messages and
	// replies.
	ScopeModelText Scope = "model_text"
)

// Scopes lists every Scope.
var Scopes = []Scope{ScopeToolOutput, ScopeToolInput, ScopeModelText}

// Level says how closely a tool's calls are compared. The set is closed.
type Level string

// The comparison levels.
const (
	// LevelExact compares a call's output text, its error flag and its
	// outcome (after normalisation). It is the default.
	LevelExact Level = "exact"
	// LevelExitCode compares only how a call ended: success or the failure
	// kind and code (a shell's exit status), and the error flag. Its text
	// is not compared, here or in the model requests that carry it.
	LevelExitCode Level = "exit_code"
	// LevelIgnore compares neither a call's output nor how it ended. The
	// call must still happen, and its input, permission decision and
	// hooks are still compared, because those are policy, not output.
	LevelIgnore Level = "ignore"
)

// Levels lists every Level.
var Levels = []Level{LevelExact, LevelExitCode, LevelIgnore}

// ErrRule is wrapped by the errors for a normalisation rule or a tool
// level that cannot be used.
var ErrRule = errors.New("bad normalisation rule")

// ParseScope returns the Scope named s, or an error wrapping ErrRule that
// lists the valid names.
func ParseScope(s string) (Scope, error) {
	if slices.Contains(Scopes, Scope(s)) {
		return Scope(s), nil
	}
	return "", fmt.Errorf("%w: unknown scope %q; use one of %s", ErrRule, s, joinNames(Scopes))
}

// ParseLevel returns the Level named s, or an error wrapping ErrRule that
// lists the valid names.
func ParseLevel(s string) (Level, error) {
	if slices.Contains(Levels, Level(s)) {
		return Level(s), nil
	}
	return "", fmt.Errorf("%w: unknown comparison level %q; use one of %s", ErrRule, s, joinNames(Levels))
}

func joinNames[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}

// Rule is a regular-expression replacement applied to both sides before
// they are compared.
type Rule struct {
	// Name says where the rule comes from in the report: a built-in's name
	// ("timestamp"), "retrace.yaml:12" or "--normalize[1]".
	Name string
	// Pattern is the expression; every match is replaced.
	Pattern *regexp.Regexp
	// Replace is the replacement, expanded as regexp.Regexp.ReplaceAllString
	// does ($1, ${name}).
	Replace string
	// Tools limits the rule to the output and input of these tools; empty
	// means every tool. A rule that names tools never rewrites model_text,
	// which belongs to no tool.
	Tools []string
	// In limits the rule to these scopes; empty means every scope.
	In []Scope

	// need, when set, is a cheap test a text must pass for the pattern to
	// possibly match; it spares the expression most texts.
	need func(string) bool
}

// NewRule compiles pattern into a Rule. The error wraps ErrRule and says
// what is wrong with the expression.
func NewRule(name, pattern, replace string, tools []string, in []Scope) (Rule, error) {
	if pattern == "" {
		return Rule{}, fmt.Errorf("%w: the pattern is empty; give a regular expression (RE2 syntax)", ErrRule)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return Rule{}, fmt.Errorf("%w: pattern %q: %v", ErrRule, pattern, err)
	}
	if re.MatchString("") {
		// A pattern that matches nothing would insert its replacement
		// between every pair of characters.
		return Rule{}, fmt.Errorf("%w: pattern %q matches the empty string, so it would rewrite between every character; make it match at least one character", ErrRule, pattern)
	}
	for _, s := range in {
		if _, err := ParseScope(string(s)); err != nil {
			return Rule{}, err
		}
	}
	return Rule{Name: name, Pattern: re, Replace: replace, Tools: tools, In: in}, nil
}

// ParseFlag reads a --normalize value, 'REGEX=>REPLACEMENT', into a Rule
// named name that applies everywhere. The separator is the last "=>", so a
// pattern may itself contain "=>" when the replacement does not.
func ParseFlag(name, value string) (Rule, error) {
	i := strings.LastIndex(value, "=>")
	if i < 0 {
		return Rule{}, fmt.Errorf("%w: %q has no \"=>\"; write it as 'REGEX=>REPLACEMENT', e.g. 'took [0-9]+ms=>took <ms>'", ErrRule, value)
	}
	return NewRule(name, value[:i], value[i+2:], nil, nil)
}

func (r Rule) applies(scope Scope, tool string) bool {
	if len(r.In) > 0 && !slices.Contains(r.In, scope) {
		return false
	}
	if len(r.Tools) == 0 {
		return true
	}
	return scope != ScopeModelText && slices.Contains(r.Tools, tool)
}

// months and days are the English names date(1) and ls(1) print in the C
// locale.
const (
	months = `(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)`
	days   = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)`
)

// builtins are the default rules, in the order they run: a temporary path
// first, so the random name of its first directory goes with it (the
// rest of the path stays, so two files in one temporary directory stay
// apart); date(1) before ls(1)'s shorter form, which it contains.
var builtins = []struct {
	name, pattern, replace string
	need                   func(string) bool
}{
	{"temp_path", `(^|[^\w./~-])(?:/tmp|/private/tmp|/(?:private/)?var/folders/[^\s/]+/[^\s/]+/T)(?:/[^\s'"<>|;,()\[\]{}/]+|\b)`, "${1}<tmp>",
		func(s string) bool { return strings.Contains(s, "/tmp") || strings.Contains(s, "/var/folders/") }},
	{"timestamp", `\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}(?::?\d{2})?)?`, "<timestamp>",
		func(s string) bool { return strings.Contains(s, ":") && strings.Contains(s, "-") }},
	{"date", `\b` + days + `,? (?:` + months + ` [ \d]\d \d{2}:\d{2}:\d{2}(?: [A-Z][A-Za-z0-9+-]{1,5})? \d{4}|\d{2} ` + months + ` \d{4} \d{2}:\d{2}:\d{2}(?: (?:GMT|UTC|[+-]\d{4}))?)\b`, "<date>",
		func(s string) bool { return strings.Contains(s, ":") && hasMonth(s) }},
	{"ls_time", `\b` + months + ` [ \d]\d (?:\d{2}:\d{2}| \d{4})\b`, "<mtime>", hasMonth},
	{"duration", `\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b`, "<duration>", nil},
	{"uuid", `\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`, "<uuid>",
		func(s string) bool { return strings.Contains(s, "-") }},
	{"hex_id", `\b(?:[0-9a-f]{16,}|[0-9A-F]{16,})\b`, "<hex>", func(s string) bool { return len(s) >= 16 }},
	{"pid", `(?im)\b(pid[ =:]+)\d+|^(\[\d+\] )\d+$`, "${1}${2}<pid>",
		func(s string) bool { return strings.Contains(s, "[") || containsFold(s, "pid") }},
}

// monthNames are the month abbreviations of months, for a quick test.
var monthNames = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// containsFold reports whether s contains the ASCII word sub in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func hasMonth(s string) bool {
	for _, m := range monthNames {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// builtinRules are builtins compiled once.
var builtinRules = func() []Rule {
	rules := make([]Rule, 0, len(builtins))
	for _, b := range builtins {
		rules = append(rules, Rule{Name: b.name, Pattern: regexp.MustCompile(b.pattern), Replace: b.replace, need: b.need})
	}
	return rules
}()

// Builtins returns the default rules: timestamps (RFC 3339, date(1)'s and
// HTTP's form, ls -l's modification time), durations ("12.3ms", "0.41s",
// "0m0.012s"), the randomly named directory of a temporary path (/tmp/X,
// macOS's /var/folders/…/T/X and X in every directory of tempDirs, e.g.
// $TMPDIR), hex ids (UUIDs, 16 or more hex digits) and process ids
// ("pid 4242", a shell's "[1] 4242"). Each match is replaced by a marker
// such as <timestamp> on both sides.
func Builtins(tempDirs ...string) []Rule {
	rules := make([]Rule, 0, len(builtinRules)+1)
	for _, r := range builtinRules {
		if r.Name == "temp_path" {
			// A $TMPDIR inside /tmp (a test's) is replaced before /tmp
			// is, or only its top would be.
			if t, ok := tempDirRule(tempDirs); ok {
				rules = append(rules, t)
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// tempDirRule matches paths under the given temporary directories, other
// than the /tmp the temp_path rule covers already.
func tempDirRule(dirs []string) (Rule, bool) {
	var alts []string
	for _, d := range dirs {
		d = strings.TrimRight(d, "/")
		if d == "" || d == "/tmp" || !strings.HasPrefix(d, "/") {
			continue
		}
		alts = append(alts, regexp.QuoteMeta(d))
	}
	if len(alts) == 0 {
		return Rule{}, false
	}
	re := regexp.MustCompile(`(^|[^\w./~-])(?:` + strings.Join(alts, "|") + `)(?:/[^\s'"<>|;,()\[\]{}/]+|\b)`)
	return Rule{Name: "temp_path", Pattern: re, Replace: "${1}<tmp>"}, true
}

// Options tunes Sessions.
type Options struct {
	// PathRewrites are applied to both sides before any rule, longest Old
	// first so that a nested directory wins over its parent.
	PathRewrites []PathRewrite
	// Rules are the caller's own rules (a configuration's, then the
	// command line's), applied after the path rewrites and before the
	// built-in rules, so each sees the text as the tool printed it.
	Rules []Rule
	// NoDefaults turns the built-in rules (Builtins) off.
	NoDefaults bool
	// TempDirs are temporary directories, besides /tmp, whose paths the
	// built-in temp_path rule replaces (the caller's $TMPDIR).
	TempDirs []string
	// Tools sets the comparison level of a tool's calls by tool name;
	// a tool not named is compared exactly.
	Tools map[string]Level
	// MaxValueRunes bounds Divergence.Recorded and Replayed; 0 means 120.
	MaxValueRunes int
}

// RuleUse says how often a rule replaced text on each side. Each distinct
// text is counted once, so a tool's output the next model request carries
// again counts once.
type RuleUse struct {
	// Rule is the rule's name.
	Rule string `json:"rule"`
	// Recorded and Replayed count its replacements in each session.
	Recorded int `json:"recorded"`
	Replayed int `json:"replayed"`
}

// normalizer holds the prepared Options and counts the rules' matches; one
// comparison owns it.
type normalizer struct {
	rewrites []PathRewrite
	rules    []Rule
	uses     map[string]int
	levels   map[string]Level
	max      int
	// done caches text's results, so each distinct text is rewritten and
	// counted once.
	done map[textKey]string
	// pids matches the process ids this side's tool_end events recorded,
	// and pidNames names each after the call that started it, the same
	// on both sides (see withPIDs).
	pids     *regexp.Regexp
	pidNames map[string]string
	// pidTexts are the tool outputs the pids are mapped in: those that
	// differ from the other side's without the mapping (see withPIDs).
	pidTexts map[string]bool
}

type textKey struct {
	s     string
	scope Scope
	tool  string
}

// other returns a normalizer with the same rules and its own counts, for
// the other side of a comparison.
func (n *normalizer) other() *normalizer {
	o := *n
	o.uses, o.done = map[string]int{}, map[textKey]string{}
	return &o
}

func newNormalizer(opts Options) *normalizer {
	rw := make([]PathRewrite, 0, len(opts.PathRewrites))
	for _, r := range opts.PathRewrites {
		// An empty Old would match between every pair of characters.
		if r.Old != "" && r.Old != r.New {
			rw = append(rw, r)
		}
	}
	sort.SliceStable(rw, func(i, j int) bool { return len(rw[i].Old) > len(rw[j].Old) })
	max := opts.MaxValueRunes
	if max <= 0 {
		max = 120
	}
	var rules []Rule
	for _, r := range opts.Rules {
		if r.Pattern != nil {
			rules = append(rules, r)
		}
	}
	if !opts.NoDefaults {
		rules = append(rules, Builtins(opts.TempDirs...)...)
	}
	return &normalizer{rewrites: rw, rules: rules, uses: map[string]int{}, levels: opts.Tools, max: max, done: map[textKey]string{}}
}

// level is the comparison level of a tool's calls.
func (n *normalizer) level(tool string) Level {
	if l, ok := n.levels[tool]; ok && l != "" {
		return l
	}
	return LevelExact
}

// text returns s with the path rewrites and the rules for scope and tool
// applied, counting each rule's matches.
func (n *normalizer) text(s string, scope Scope, tool string) string {
	if s == "" {
		return s
	}
	key := textKey{s, scope, tool}
	if t, ok := n.done[key]; ok {
		return t
	}
	out := n.apply(s, scope, tool, n.uses, n.pidTexts[s])
	n.done[key] = out
	return out
}

// apply rewrites s as text does, counting the rules' matches in uses;
// pids says whether the process ids are mapped.
func (n *normalizer) apply(s string, scope Scope, tool string, uses map[string]int, pids bool) string {
	for _, r := range n.rewrites {
		if strings.Contains(s, r.Old) {
			s = strings.ReplaceAll(s, r.Old, r.New)
		}
	}
	if pids && n.pids != nil && scope == ScopeToolOutput {
		var count int
		s = n.pids.ReplaceAllStringFunc(s, func(m string) string {
			count++
			return n.pidNames[m]
		})
		uses[pidRule] += count
	}
	for _, r := range n.rules {
		if !r.applies(scope, tool) || r.need != nil && !r.need(s) {
			continue
		}
		var count int
		s, count = replaceAll(r, s)
		uses[r.Name] += count
	}
	return s
}

// replaceAll replaces every match of r in s in one pass, expanding $1 and
// ${name} as regexp.Regexp.ReplaceAllString does, and counts the matches.
func replaceAll(r Rule, s string) (string, int) {
	matches := r.Pattern.FindAllStringSubmatchIndex(s, -1)
	if len(matches) == 0 {
		return s, 0
	}
	out := make([]byte, 0, len(s))
	last := 0
	for _, m := range matches {
		out = append(out, s[last:m[0]]...)
		out = r.Pattern.ExpandString(out, r.Replace, s, m)
		last = m[1]
	}
	return string(append(out, s[last:]...)), len(matches)
}

// pidRule names the exact process id mapping in the rule counts.
const pidRule = "pid_map"

// withPIDs gives the two sides the process ids their calls started, as
// tool_end recorded them (tool_use_id to pid): a recorded call's pid and
// the replayed same call's pid are both replaced by "<pid:ID>" in the
// tool output of either side, wherever they stand as a whole number, so
// that `echo $$` replays identically and a pid that is not one of these
// still counts as a difference. Only tool output is mapped (tool input
// and model text come from the recording on both sides), and only a call's
// output that differs without the mapping: a number that happens to equal
// a pid (seq's output, say) is left alone in an output that matches as it
// is.
func withPIDs(rn, pn *normalizer, recorded, replayed map[string]int) {
	set := func(n *normalizer, pids map[string]int) {
		names := map[string]string{}
		var alts []string
		for _, id := range slices.Sorted(maps.Keys(pids)) {
			if _, both := recorded[id]; !both {
				continue
			}
			if _, both := replayed[id]; !both {
				continue
			}
			num := strconv.Itoa(pids[id])
			if _, dup := names[num]; dup || pids[id] <= 0 {
				continue
			}
			names[num] = "<pid:" + id + ">"
			alts = append(alts, num)
		}
		if len(alts) == 0 {
			return
		}
		n.pids, n.pidNames = regexp.MustCompile(`\b(?:`+strings.Join(alts, "|")+`)\b`), names
	}
	set(rn, recorded)
	set(pn, replayed)
}

// used lists the rules that matched on either side, in the order they ran.
func used(rec, rep *normalizer) []RuleUse {
	out := []RuleUse{}
	if a, b := rec.uses[pidRule], rep.uses[pidRule]; a+b > 0 {
		out = append(out, RuleUse{Rule: pidRule, Recorded: a, Replayed: b})
	}
	seen := map[string]bool{}
	for _, r := range rec.rules {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		if a, b := rec.uses[r.Name], rep.uses[r.Name]; a+b > 0 {
			out = append(out, RuleUse{Rule: r.Name, Recorded: a, Replayed: b})
		}
	}
	return out
}

// short cuts s to the configured length so that reports stay readable;
// the full values are in the trajectories.
func (n *normalizer) short(s string) string {
	return cut(s, n.max)
}

// cut keeps the first max runes of s and marks the cut with "…".
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
