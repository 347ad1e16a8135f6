package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
)

// Model is everything a report shows, gathered from a loaded database by
// Gather and written as HTML by Render.
type Model struct {
	// Title heads the page.
	Title string
	// Summary counts the corpus.
	Summary Summary
	// EndReasons are the end_reasons metric's rows.
	EndReasons []EndReason
	// Funnel is the tool funnel: the total first, then one row per tool.
	Funnel []FunnelRow
	// UnknownTools are the tool names the model made up, the drill-down of
	// the funnel's '(unknown tool)' row (the unknown_tools metric), most
	// called first.
	UnknownTools []Count
	// Latency has one entry per tool with at least one measured duration.
	Latency []ToolLatency
	// FailureKinds count failed calls per tool and failure kind.
	FailureKinds []FailureKindRow
	// Permissions is the permission funnel.
	Permissions Permissions
	// Defenses are the defenses metric's '(all)' rows: triggers per defense.
	Defenses []DefenseRow
	// Liveness is the detectors' defense liveness table.
	Liveness detectors.Liveness
	// Findings are the detectors' findings, worst first, each with links.
	Findings []FindingView
	// FindingGroups are the findings by detector, the worst detector
	// first: the page lists a group collapsed, with its counts, so that
	// thousands of findings of one detector do not bury the others.
	FindingGroups []FindingGroup
	// Detailed are the sessions shown in full (timeline and conversation),
	// the most worth reading first.
	Detailed []SessionDetail
	// Others are the remaining sessions, one summary row each.
	Others []SessionRow
	// Top is the number of sessions Options asked to show in full.
	Top int
}

// Summary counts a corpus.
type Summary struct {
	Sessions, Turns, Calls, Failures int64
	// Tokens sum the sessions' model responses.
	InputTokens, OutputTokens, CacheReadTokens, CacheCreationTokens int64
}

// EndReason is one row of the end_reasons metric.
type EndReason struct {
	Reason   string
	Sessions int64
	// Share is of every session with a session_start.
	Share float64
}

// FunnelRow is what became of one tool's calls (Tool "(all)" for the total).
type FunnelRow struct {
	Tool string
	// Calls counts tool_call events: the denominator of Allowed, Denied,
	// Undecided, Executed and Lost.
	Calls int64
	// Allowed and Denied count calls whose permission decision was allow
	// or deny; Undecided those with no recorded decision.
	Allowed, Denied, Undecided int64
	// Executed counts the calls that ran (tool_calls.ran, the glossary's
	// one definition: the tool's code started). It is the denominator of
	// Successes and ExecFailures.
	Executed int64
	// Successes count tool_success; Failures every tool_failure, and
	// ExecFailures those among Executed.
	Successes, Failures, ExecFailures int64
	// Lost counts calls with neither a success nor a failure: a call the
	// runtime lost, which a green run hides (lost_call in
	// docs/failure-modes.md).
	Lost int64
}

// ToolLatency is one tool's latency samples (tool_calls.duration_ms: the
// own durations of the calls that ran; never batch averages, never a call
// that did not run) and the latency metric's percentiles of them.
type ToolLatency struct {
	Tool string
	// N counts calls with a measured duration: the denominator.
	N             int64
	P50, P95, P99 float64
	// Durations are the measured durations in ms, sorted.
	Durations []float64
}

// FailureKindRow counts one tool's failures of one kind.
type FailureKindRow struct {
	Tool, Kind string
	Failures   int64
}

// Permissions is the permission funnel over every permission event.
type Permissions struct {
	// Decisions are the permissions metric's rows.
	Decisions []PermissionRow
	// Allows counts permission_allow events per source, most first.
	Allows []Count
	// Events counts every permission event: the denominator of Decisions'
	// shares.
	Events int64
	// Prompts, Denials and AllowsTotal count the decisions of each kind.
	Prompts, Denials, AllowsTotal int64
}

// PermissionRow is one row of the permissions metric.
type PermissionRow struct {
	Decision, Source string
	NeededPrompt     bool
	Decisions        int64
	Share            float64
}

// Count is a named count.
type Count struct {
	Name string
	N    int64
}

// DefenseRow is one defense's triggers over the corpus.
type DefenseRow struct {
	Defense                                      string
	SessionsEnabled, SessionsTriggered, Triggers int64
}

// FindingView is a finding with where the report shows its evidence.
type FindingView struct {
	detectors.Finding
	// Anchor is the finding's own element id.
	Anchor string
	// SessionHref links to the session's section or summary row.
	SessionHref string
	// Evidence are the finding's evidence with links to their events.
	Evidence []EvidenceView
}

// FindingGroup is one detector's findings.
type FindingGroup struct {
	Detector, Title string
	// Severity is the worst of the group's findings.
	Severity detectors.Severity
	// Count is the number of the detector's findings, in Sessions
	// sessions.
	Count, Sessions int
	// Shown are the first FindingsShown findings, worst first; More
	// counts the others, which the page names a command to list.
	Shown []FindingView
	More  int
}

// FindingsShown is how many findings of one detector the page shows in
// full: enough to see the pattern, few enough that a corpus where one
// detector fires in every session keeps the page small.
const FindingsShown = 20

// groupFindings groups fs (worst first) by detector: the groups by their
// worst severity, then by count, then by id.
func groupFindings(fs []FindingView) []FindingGroup {
	var groups []FindingGroup
	index := map[string]int{}
	sessions := map[string]map[string]bool{}
	for _, f := range fs {
		i, ok := index[f.Detector]
		if !ok {
			i = len(groups)
			index[f.Detector] = i
			groups = append(groups, FindingGroup{Detector: f.Detector, Title: f.Title, Severity: f.Severity})
			sessions[f.Detector] = map[string]bool{}
		}
		g := &groups[i]
		g.Count++
		if f.Severity.Rank() > g.Severity.Rank() {
			g.Severity = f.Severity
		}
		sessions[f.Detector][f.Session] = true
		if len(g.Shown) < FindingsShown {
			g.Shown = append(g.Shown, f)
		}
	}
	for i := range groups {
		groups[i].Sessions = len(sessions[groups[i].Detector])
		groups[i].More = groups[i].Count - len(groups[i].Shown)
	}
	slices.SortStableFunc(groups, func(a, b FindingGroup) int {
		return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Detector, b.Detector))
	})
	return groups
}

// EvidenceView is one piece of evidence and the link to its event, which
// is the session row when the session is not shown in full.
type EvidenceView struct {
	detectors.Evidence
	Href string
}

// SessionRow summarises one session.
type SessionRow struct {
	ID, File, Reason string
	Started          time.Time
	DurationMs       float64
	Turns, Calls     int64
	Failures         int64
	// Model and Tags are the session_start's model and run labels
	// (retrace run --tag), tags as k=v sorted by key.
	Model        string
	Tags         []string
	Findings     int
	InputTokens  int64
	OutputTokens int64
	// Anchor is the element id of the session's section or row.
	Anchor string
}

// SessionDetail is a session shown in full.
type SessionDetail struct {
	SessionRow
	// Turns are the session's model turns in order.
	TurnList []Turn
	// Prompt is the first user message, abbreviated.
	Prompt string
	// Anchors are element ids of events not shown as their own entry.
	Anchors []string
}

// Turn is one model turn of a session: the model's reply and the calls it
// asked for, with what happened around them.
type Turn struct {
	N int
	// Anchor is the element id of the model response.
	Anchor     string
	StopReason string
	// ModelStartUs and ModelEndUs bound the model call, in µs since the
	// session started (0, 0 when not recorded).
	ModelStartUs, ModelEndUs  int64
	ModelMs                   float64
	InputTokens, OutputTokens int64
	// Text is the model's text, abbreviated.
	Text  string
	Calls []Call
	// Marks are the defense triggers, reminders and user messages of the turn.
	Marks []Mark
	// Anchors are element ids of the turn's other events.
	Anchors []string
}

// Call is one tool call with its own measured duration.
type Call struct {
	ID, Tool string
	Anchor   string
	Batch    int
	// Input and Output are abbreviated.
	Input, Output string
	Outcome       string
	FailureKind   string
	ErrorCode     string
	Permission    string
	// PermissionSource is the source of the last allow or deny.
	PermissionSource string
	Prompted         bool
	// DurationMs is the tool_end's duration; Measured is false when the
	// source did not measure it or the call did not run.
	DurationMs float64
	Measured   bool
	// Ran is tool_calls.ran: the tool's code started.
	Ran bool
	// EndUs is the tool_end's time in µs since the session started; the
	// call started DurationMs before it.
	EndUs     int64
	Truncated bool
	// Anchors are element ids of the call's other events.
	Anchors []string
}

// Mark is an event drawn on a turn: a defense trigger, a reminder or a
// user message.
type Mark struct {
	Kind   string // "defense", "reminder", "prompt" or "user"
	Label  string
	Text   string
	Anchor string
	AtUs   int64
}

// Options set what Gather includes.
type Options struct {
	// Title heads the page; empty means "retrace report".
	Title string
	// Top is how many sessions get a full timeline and conversation; the
	// rest get a summary row. Zero means DefaultTop.
	Top int
	// TextMax caps each text shown in a conversation, in bytes; zero
	// means DefaultTextMax.
	TextMax int
}

// Defaults of Options.
const (
	DefaultTop     = 50
	DefaultTextMax = 600
)

// Gather reads the report's model from db, which holds the loaded
// trajectories, with the detectors' findings and liveness table over them.
func Gather(ctx context.Context, db *metrics.DB, rep detectors.Report, live detectors.Liveness, opts Options) (*Model, error) {
	if opts.Top <= 0 {
		opts.Top = DefaultTop
	}
	if opts.TextMax <= 0 {
		opts.TextMax = DefaultTextMax
	}
	m := &Model{Title: cmp.Or(opts.Title, "retrace report"), Liveness: live, Top: opts.Top}
	g := gatherer{ctx: ctx, db: db}
	g.summary(m)
	g.endReasons(m)
	g.funnel(m)
	g.latency(m)
	g.failureKinds(m)
	g.permissions(m)
	g.defenses(m)
	g.sessions(m, rep.Findings, opts)
	if g.err != nil {
		return nil, g.err
	}
	return m, nil
}

// gatherer runs the queries of Gather, keeping the first error.
type gatherer struct {
	ctx context.Context
	db  *metrics.DB
	err error
}

func (g *gatherer) query(q string) [][]any {
	if g.err != nil {
		return nil
	}
	t, err := g.db.Query(g.ctx, q)
	if err != nil {
		g.err = fmt.Errorf("report: %w", err)
		return nil
	}
	return t.Rows
}

func (g *gatherer) metric(name string) [][]any {
	if g.err != nil {
		return nil
	}
	t, err := g.db.Metric(g.ctx, name)
	if err != nil {
		g.err = fmt.Errorf("report: %w", err)
		return nil
	}
	return t.Rows
}

func (g *gatherer) summary(m *Model) {
	for _, r := range g.query(`SELECT count(*), coalesce(sum(turns), 0), coalesce(sum(tool_calls), 0), coalesce(sum(tool_failures), 0),
       coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_creation_tokens), 0)
FROM sessions`) {
		m.Summary = Summary{Sessions: toInt(r[0]), Turns: toInt(r[1]), Calls: toInt(r[2]), Failures: toInt(r[3]),
			InputTokens: toInt(r[4]), OutputTokens: toInt(r[5]), CacheReadTokens: toInt(r[6]), CacheCreationTokens: toInt(r[7])}
	}
}

func (g *gatherer) endReasons(m *Model) {
	for _, r := range g.metric("end_reasons") {
		m.EndReasons = append(m.EndReasons, EndReason{Reason: toString(r[0]), Sessions: toInt(r[1]), Share: toFloat(r[2])})
	}
}

// funnel reads the glossary's terms from tool_calls (ran, permission,
// outcome, tool_label), never deriving them: a made-up tool name is one
// '(unknown tool)' row, whose names UnknownTools lists.
func (g *gatherer) funnel(m *Model) {
	for _, r := range g.query(`SELECT coalesce(tool_label, '(all)') AS tool, count(*),
       count(*) FILTER (WHERE permission = 'allow'), count(*) FILTER (WHERE permission = 'deny'),
       count(*) FILTER (WHERE permission IS NULL),
       count(*) FILTER (WHERE ran),
       count(*) FILTER (WHERE outcome = 'success'), count(*) FILTER (WHERE outcome = 'failure'),
       count(*) FILTER (WHERE outcome = 'failure' AND ran),
       count(*) FILTER (WHERE outcome = 'lost')
FROM tool_calls
GROUP BY GROUPING SETS ((tool_label), ())
ORDER BY grouping(tool_label) DESC, count(*) DESC, tool_label`) {
		m.Funnel = append(m.Funnel, FunnelRow{Tool: toString(r[0]), Calls: toInt(r[1]), Allowed: toInt(r[2]), Denied: toInt(r[3]),
			Undecided: toInt(r[4]), Executed: toInt(r[5]), Successes: toInt(r[6]), Failures: toInt(r[7]), ExecFailures: toInt(r[8]), Lost: toInt(r[9])})
	}
	for _, r := range g.metric("unknown_tools") {
		m.UnknownTools = append(m.UnknownTools, Count{Name: toString(r[0]), N: toInt(r[1])})
	}
}

func (g *gatherer) latency(m *Model) {
	byTool := map[string][]float64{}
	for _, r := range g.query(`SELECT tool_label, list(duration_ms ORDER BY duration_ms) FROM tool_calls WHERE duration_ms IS NOT NULL GROUP BY tool_label`) {
		list, _ := r[1].([]any)
		ds := make([]float64, 0, len(list))
		for _, v := range list {
			ds = append(ds, toFloat(v))
		}
		byTool[toString(r[0])] = ds
	}
	for _, r := range g.metric("latency") {
		tool := toString(r[0])
		m.Latency = append(m.Latency, ToolLatency{Tool: tool, N: toInt(r[1]), P50: toFloat(r[2]), P95: toFloat(r[3]), P99: toFloat(r[4]), Durations: byTool[tool]})
	}
	slices.SortStableFunc(m.Latency, func(a, b ToolLatency) int { return cmp.Compare(b.N, a.N) })
}

func (g *gatherer) failureKinds(m *Model) {
	for _, r := range g.query(`SELECT tool, coalesce(failure_kind, '(none)'), count(*) FROM tool_calls WHERE outcome = 'failure'
GROUP BY ALL ORDER BY 3 DESC, 1, 2`) {
		m.FailureKinds = append(m.FailureKinds, FailureKindRow{Tool: toString(r[0]), Kind: toString(r[1]), Failures: toInt(r[2])})
	}
}

func (g *gatherer) permissions(m *Model) {
	p := &m.Permissions
	allows := map[string]int64{}
	for _, r := range g.metric("permissions") {
		row := PermissionRow{Decision: toString(r[0]), Source: toString(r[1]), NeededPrompt: toBool(r[2]), Decisions: toInt(r[3]), Share: toFloat(r[4])}
		p.Decisions = append(p.Decisions, row)
		p.Events += row.Decisions
		switch row.Decision {
		case "allow":
			p.AllowsTotal += row.Decisions
			allows[cmp.Or(row.Source, "(none)")] += row.Decisions
		case "prompt":
			p.Prompts += row.Decisions
		case "deny":
			p.Denials += row.Decisions
		}
	}
	for name, n := range allows {
		p.Allows = append(p.Allows, Count{Name: name, N: n})
	}
	slices.SortFunc(p.Allows, func(a, b Count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name)) })
}

func (g *gatherer) defenses(m *Model) {
	for _, r := range g.metric("defenses") {
		if toString(r[0]) != "(all)" {
			continue
		}
		m.Defenses = append(m.Defenses, DefenseRow{Defense: toString(r[1]), SessionsEnabled: toInt(r[2]), SessionsTriggered: toInt(r[3]), Triggers: toInt(r[4])})
	}
}

// sessions ranks the sessions (findings, then failures, then the longest
// first), details the top ones and summarises the rest, and links the
// findings to them.
func (g *gatherer) sessions(m *Model, findings []detectors.Finding, opts Options) {
	perSession := map[string]int{}
	for _, f := range findings {
		perSession[f.Session]++
	}
	var rows []SessionRow
	for _, r := range g.query(`SELECT s.session, coalesce(f.file, ''), coalesce(s.reason, '(none)'), s.started,
       coalesce(epoch_us(s.ended) - epoch_us(s.started), 0) / 1000.0, coalesce(s.turns, 0), coalesce(s.tool_calls, 0),
       coalesce(s.tool_failures, 0), s.input_tokens, s.output_tokens, coalesce(f.model, ''), coalesce(f.tags, '')
FROM sessions s LEFT JOIN (SELECT session, any_value(file) AS file, any_value(model) AS model, any_value(CAST(tags AS VARCHAR)) AS tags
                           FROM raw_session_start GROUP BY session) f USING (session)`) {
		started, _ := r[3].(time.Time)
		id := toString(r[0])
		rows = append(rows, SessionRow{ID: id, File: toString(r[1]), Reason: toString(r[2]), Started: started.UTC(), DurationMs: toFloat(r[4]),
			Turns: toInt(r[5]), Calls: toInt(r[6]), Failures: toInt(r[7]), InputTokens: toInt(r[8]), OutputTokens: toInt(r[9]),
			Model: toString(r[10]), Tags: tagList(toString(r[11])), Findings: perSession[id], Anchor: sessionAnchor(id)})
	}
	slices.SortFunc(rows, func(a, b SessionRow) int {
		return cmp.Or(cmp.Compare(b.Findings, a.Findings), cmp.Compare(b.Failures, a.Failures),
			cmp.Compare(b.DurationMs, a.DurationMs), cmp.Compare(a.ID, b.ID))
	})
	top := rows[:min(len(rows), opts.Top)]
	m.Others = rows[len(top):]
	detailed := map[string]bool{}
	if len(top) > 0 {
		m.Detailed = g.details(top, opts.TextMax)
		for _, d := range m.Detailed {
			detailed[d.ID] = true
		}
	}
	for i, f := range findings {
		fv := FindingView{Finding: f, Anchor: fmt.Sprintf("f-%d", i+1), SessionHref: "#" + sessionAnchor(f.Session)}
		for _, e := range f.Evidence {
			href := fv.SessionHref
			if detailed[f.Session] {
				href = "#" + eventAnchor(f.Session, e.Seq)
			}
			fv.Evidence = append(fv.Evidence, EvidenceView{Evidence: e, Href: href})
		}
		m.Findings = append(m.Findings, fv)
	}
	m.FindingGroups = groupFindings(m.Findings)
}

// tagList reads a session_start's tags (a JSON object) as k=v, sorted.
func tagList(tags string) []string {
	var m map[string]string
	if json.Unmarshal([]byte(tags), &m) != nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// sessionAnchor is the element id of a session, made of safe characters
// only: ids come from trajectories, which are untrusted.
func sessionAnchor(id string) string { return "s-" + safeID(id) }

// eventAnchor is the element id of a session's event.
func eventAnchor(session string, seq int64) string {
	return fmt.Sprintf("e-%s-%d", safeID(session), seq)
}

func safeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x", r)
		}
	}
	return b.String()
}
