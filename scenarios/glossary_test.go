package scenarios_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/synth"
)

// TestGlossaryTermsAgreeInEveryConsumer computes each term of the metrics
// glossary (called, denied, ran, succeeded, failed by kind, lost, latency,
// failure rate among the calls that ran, the tool label) over the same
// runs through every consumer — the metrics, an eval threshold, a diff
// row, the report's data model and, for ran, the denominator_shift
// detector — and asserts that they are equal: on the built-in suite's
// runs and on a synth corpus with denials, aborts, timeouts, lost calls
// and made-up tool names.
func TestGlossaryTermsAgreeInEveryConsumer(t *testing.T) {
	ctx := context.Background()
	suite, err := scenarios.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := scenarios.Run(ctx, suite, scenarios.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	synthDir := filepath.Join(t.TempDir(), "synth")
	if _, err := synth.Write(ctx, synthDir, synth.Options{Sessions: 60, Seed: 31, Faults: []string{"lost_call", "hallucinated_tool"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, dir string }{{"builtin", filepath.Join(out, "runs")}, {"synth", synthDir}} {
		t.Run(c.name, func(t *testing.T) {
			g := gatherTerms(t, c.dir)
			g.crossCheck(t, c.name == "synth")
		})
	}
}

// On the built-in suite p95(bash) counts only the bash calls that ran:
// the suite denies bash calls, whose 0 ms tool_ends are no samples.
func TestBuiltinBashLatencyCountsOnlyCallsThatRan(t *testing.T) {
	ctx := context.Background()
	suite, err := scenarios.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := scenarios.Run(ctx, suite, scenarios.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, filepath.Join(out, "runs")); err != nil {
		t.Fatal(err)
	}
	// Counted from the raw events, apart from the views: the bash calls
	// with a tool_end, and those of them that failed before running.
	// A permission_denied of code sandbox is the kernel refusing a
	// running command: it ran.
	raw := queryRow(t, db, `SELECT count(*), count(*) FILTER (WHERE f.failure_kind IN ('permission_denied', 'hook_blocked', 'invalid_input', 'not_found') AND f.error_code IS DISTINCT FROM 'sandbox'),
       count(*) FILTER (WHERE f.failure_kind IS NULL OR f.failure_kind IN ('tool_error', 'timeout', 'exception') OR (f.failure_kind = 'aborted' AND e.duration_ms > 0) OR f.error_code = 'sandbox')
FROM raw_tool_end e LEFT JOIN raw_tool_failure f USING (session, tool_use_id) WHERE e.tool = 'bash'`)
	ended, refused, ran := num(raw[0]), num(raw[1]), num(raw[2])
	if refused == 0 {
		t.Fatalf("the built-in suite refused no bash call (%v bash tool_ends): the test proves nothing", ended)
	}
	sessions := allSessions(t, db)
	tr, err := scenarios.EvalThreshold(ctx, db, "p95(bash) < 1000m", sessions)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := metrics.ParseAggregate("p95(bash)")
	n := num(queryRow(t, db, "SELECT count(*) FROM ("+a.SamplesSQL("")+")")[0])
	if n != ran || n >= ended {
		t.Errorf("p95(bash) has %v samples; the bash calls that ran are %v, of %v with a tool_end (%v refused)", n, ran, ended, refused)
	}
	lat := metricRows(t, db, "latency")["bash"]
	if lat == nil || num(lat[1]) != ran || tr.Value == nil || !near(*tr.Value, num(lat[3])) {
		t.Errorf("latency bash %v, threshold %s (%v): want %v samples and the same p95", lat, tr.Got, tr.Value, ran)
	}
}

// terms is what each consumer says over one corpus.
type terms struct {
	db       *metrics.DB
	sessions []string
	funnel   map[string][]any // the funnel metric, by tool label
	kinds    map[string][]any // failure_kinds, by kind
	latency  map[string][]any // latency, by tool label
	unknown  [][]any          // unknown_tools
	model    *report.Model
	rows     map[string]diff.Row
	det      []detectors.Finding
	// thresholds counts the thresholds evaluated.
	thresholds int
}

func gatherTerms(t *testing.T, dir string) *terms {
	t.Helper()
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The detectors with denominator_shift made to speak for every tool
	// with a call that did not run, so its counts can be compared.
	opts := detectors.Options{Settings: detectors.Settings{"denominator_shift": {"max_gap": 0, "min_calls": 1}}}
	rep, live, _, err := detectors.DetectLiveness(ctx, db, []string{dir}, detectors.Catalog(), opts)
	if err != nil {
		t.Fatal(err)
	}
	g := &terms{db: db, sessions: allSessions(t, db), funnel: metricRows(t, db, "funnel"), kinds: metricRows(t, db, "failure_kinds"),
		latency: metricRows(t, db, "latency"), det: rep.Findings}
	tab, err := db.Metric(ctx, "unknown_tools")
	if err != nil {
		t.Fatal(err)
	}
	g.unknown = tab.Rows
	if g.model, err = report.Gather(ctx, db, rep, live, report.Options{Top: 1}); err != nil {
		t.Fatal(err)
	}
	// One diff of the corpus against itself, with a row per term and tool.
	var extra []*metrics.Aggregate
	for tool := range g.funnel {
		if tool == "(all)" || tool == "(unknown tool)" {
			continue
		}
		for _, src := range []string{"rate(denied, tool=%s)", "rate(success, tool=%s)", "rate(failure, tool=%s)", "rate(lost, tool=%s)",
			"rate(failure, tool=%s, among=executed)", "p50(duration, tool=%s)", "p95(duration, tool=%s)"} {
			extra = append(extra, mustAgg(t, fmt.Sprintf(src, tool)))
		}
	}
	for kind := range g.kinds {
		extra = append(extra, mustAgg(t, "rate(failure, failure_kind="+kind+")"))
	}
	in := diff.Input{DB: db, Report: rep}
	res, err := diff.Compare(ctx, in, in, diff.Options{Extra: extra, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	g.rows = map[string]diff.Row{}
	for _, r := range res.Rows {
		g.rows[r.Metric] = r
	}
	return g
}

// crossCheck asserts that every consumer agrees with the metrics.
func (g *terms) crossCheck(t *testing.T, synthetic bool) {
	t.Helper()
	all := g.funnel["(all)"]
	if all == nil {
		t.Fatal("the funnel has no (all) row")
	}
	// The corpus has what makes the terms differ, or the test proves little.
	notRan := num(all[1]) - num(all[3]) - num(all[6])
	if num(all[2]) == 0 || notRan == 0 {
		t.Fatalf("the corpus has %v denied calls and %v that did not run: the terms would not differ", all[2], notRan)
	}
	if synthetic {
		for _, k := range []string{"aborted", "timeout", "permission_denied"} {
			if g.kinds[k] == nil {
				t.Fatalf("the synth corpus has no %s failure", k)
			}
		}
		if num(all[6]) == 0 || g.funnel["(unknown tool)"] == nil {
			t.Fatalf("the synth corpus has no lost call or no made-up tool: %v", all)
		}
	}

	// Report: the funnel, row by row, and the drill-down.
	reported := map[string]report.FunnelRow{}
	for _, r := range g.model.Funnel {
		reported[r.Tool] = r
	}
	if len(reported) != len(g.funnel) {
		t.Errorf("the report's funnel has %d rows, the metric %d", len(reported), len(g.funnel))
	}
	compared := 0
	for tool, m := range g.funnel {
		called, denied, ran, ok, failed, lost := num(m[1]), num(m[2]), num(m[3]), num(m[4]), num(m[5]), num(m[6])
		r := reported[tool]
		if float64(r.Calls) != called || float64(r.Denied) != denied || float64(r.Executed) != ran || float64(r.Successes) != ok ||
			float64(r.Failures) != failed || float64(r.Lost) != lost || float64(r.ExecFailures) != ran-ok {
			t.Errorf("%s: report called/denied/ran/succeeded/failed/lost %d/%d/%d/%d/%d/%d (failed while running %d), metrics %v",
				tool, r.Calls, r.Denied, r.Executed, r.Successes, r.Failures, r.Lost, r.ExecFailures, m[1:])
		}
		if tool == "(all)" || tool == "(unknown tool)" {
			continue
		}
		// The eval thresholds: a count and rates over the same calls.
		g.threshold(t, fmt.Sprintf("count(tool_call, tool=%s) >= 0", tool), called)
		if called > 0 {
			g.threshold(t, fmt.Sprintf("rate(denied, tool=%s) <= 1", tool), denied/called)
			g.threshold(t, fmt.Sprintf("rate(success, tool=%s) <= 1", tool), ok/called)
			g.threshold(t, fmt.Sprintf("rate(failure, tool=%s) <= 1", tool), failed/called)
			g.threshold(t, fmt.Sprintf("rate(lost, tool=%s) <= 1", tool), lost/called)
		}
		if ran > 0 {
			g.threshold(t, fmt.Sprintf("rate(failure, tool=%s, among=executed) <= 1", tool), (ran-ok)/ran)
		}
		// The diff rows (those with data enough to be rows).
		compared += g.diffRate(t, fmt.Sprintf("rate(denied, tool=%s)", tool), denied, called)
		compared += g.diffRate(t, fmt.Sprintf("rate(success, tool=%s)", tool), ok, called)
		compared += g.diffRate(t, fmt.Sprintf("rate(failure, tool=%s)", tool), failed, called)
		compared += g.diffRate(t, fmt.Sprintf("rate(lost, tool=%s)", tool), lost, called)
		compared += g.diffRate(t, fmt.Sprintf("rate(failure, tool=%s, among=executed)", tool), ran-ok, ran)
	}
	if compared == 0 {
		t.Error("no diff rate row had data enough to be compared")
	}

	// Failed, by kind, and which kinds ran.
	byKind := map[string]int64{}
	for _, r := range g.model.FailureKinds {
		byKind[r.Kind] += r.Failures
	}
	for kind, m := range g.kinds {
		failures := num(m[1])
		if float64(byKind[kind]) != failures {
			t.Errorf("failure kind %s: report %d, metrics %v", kind, byKind[kind], failures)
		}
		g.threshold(t, "rate(failure, failure_kind="+kind+") <= 1", failures/num(all[1]))
		g.diffRate(t, "rate(failure, failure_kind="+kind+")", failures, num(all[1]))
		// Of the kinds decided before a tool starts, only the sandbox's
		// permission_denied (a running command refused an access) ran.
		sandboxed := num(queryRow(t, g.db, `SELECT count(*) FROM raw_tool_failure WHERE error_code = 'sandbox' AND failure_kind = '`+kind+`'`)[0])
		if ran := num(m[2]); (kind == "tool_error" || kind == "timeout" || kind == "exception") && ran != failures ||
			(kind == "permission_denied" || kind == "hook_blocked" || kind == "invalid_input" || kind == "not_found") && ran != sandboxed {
			t.Errorf("failure kind %s: %v of %v failures ran, want %v", kind, ran, failures, sandboxed)
		}
	}

	// Latency: the metric, the report's histograms, a threshold and the
	// diff's distribution rows.
	reportedLat := map[string]report.ToolLatency{}
	for _, l := range g.model.Latency {
		reportedLat[l.Tool] = l
	}
	if len(reportedLat) != len(g.latency) {
		t.Errorf("the report has latency for %d tools, the metric for %d", len(reportedLat), len(g.latency))
	}
	for tool, m := range g.latency {
		n, p50, p95 := num(m[1]), num(m[2]), num(m[3])
		r := reportedLat[tool]
		if float64(r.N) != n || float64(len(r.Durations)) != n || !near(r.P50, p50) || !near(r.P95, p95) {
			t.Errorf("latency %s: report n %d (%d samples drawn), p50 %v, p95 %v; metrics %v", tool, r.N, len(r.Durations), r.P50, r.P95, m[1:])
		}
		if f := g.funnel[tool]; f == nil || n > num(f[3]) {
			t.Errorf("latency %s has %v samples, more than the %v calls that ran", tool, n, f)
		}
		if n >= 20 {
			g.threshold(t, "p95("+tool+") < 1000m", p95)
		}
		for _, q := range []struct {
			src string
			v   float64
		}{{"p50(duration, tool=" + tool + ")", p50}, {"p95(duration, tool=" + tool + ")", p95}} {
			if row, ok := g.rows[q.src]; ok && (float64(row.BaseN) != n || !near(row.Base, q.v)) {
				t.Errorf("%s: diff %v over %d samples, metrics %v over %v", q.src, row.Base, row.BaseN, q.v, n)
			}
		}
	}

	// The tool label: one (unknown tool) row, the names in the drill-down.
	var unknownCalls float64
	var names []string
	for _, r := range g.unknown {
		unknownCalls += num(r[1])
		names = append(names, fmt.Sprint(r[0]))
	}
	if u := g.funnel["(unknown tool)"]; u != nil && num(u[1]) != unknownCalls || u == nil && unknownCalls != 0 {
		t.Errorf("the (unknown tool) row %v and the unknown_tools drill-down (%v calls) disagree", u, unknownCalls)
	}
	if len(g.model.UnknownTools) != len(names) {
		t.Errorf("the report lists %d made-up tool names, unknown_tools %d", len(g.model.UnknownTools), len(names))
	}
	for _, name := range names {
		if g.funnel[name] != nil || g.latency[name] != nil {
			t.Errorf("the made-up tool name %s is a row of the funnel or the latency", name)
		}
		for metric := range g.rows {
			if regexp.MustCompile(`tool=` + regexp.QuoteMeta(name) + `[,)]`).MatchString(metric) {
				t.Errorf("the made-up tool name %s is a diff row: %s", name, metric)
			}
		}
	}

	// detect: denominator_shift counts requested and executed (ran) calls.
	shift := regexp.MustCompile(`^(\S+) succeeded in [\d.]+% of its (\d+) requested calls but in [\d.]+% of its (\d+) executed ones`)
	seen := 0
	for _, f := range g.det {
		if f.Detector != "denominator_shift" {
			continue
		}
		m := shift.FindStringSubmatch(f.Message)
		if m == nil {
			t.Errorf("denominator_shift message %q does not say its counts", f.Message)
			continue
		}
		seen++
		requested, _ := strconv.ParseFloat(m[2], 64)
		executed, _ := strconv.ParseFloat(m[3], 64)
		if fr := g.funnel[m[1]]; fr == nil || num(fr[1]) != requested || num(fr[3]) != executed {
			t.Errorf("denominator_shift %s: %v requested, %v executed; the funnel says %v", m[1], requested, executed, fr)
		}
	}
	if seen == 0 {
		t.Error("denominator_shift spoke for no tool: detect's ran was not compared")
	}
	t.Logf("%d tools, %d failure kinds, %d latency rows, %d diff rate rows, %d thresholds, %d denominator_shift findings compared; (all) %v",
		len(g.funnel)-1, len(g.kinds), len(g.latency), compared, g.thresholds, seen, all[1:])
}

// threshold evaluates src as an eval does and checks its value.
func (g *terms) threshold(t *testing.T, src string, want float64) {
	t.Helper()
	g.thresholds++
	tr, err := scenarios.EvalThreshold(context.Background(), g.db, src, g.sessions)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	if tr.Value == nil || !near(*tr.Value, want) {
		t.Errorf("threshold %s: %s (value %v), the metrics say %v", src, tr.Got, tr.Value, want)
	}
}

// diffRate checks a diff rate row's numerator and denominator; 1 when the
// row was there to compare.
func (g *terms) diffRate(t *testing.T, metric string, hits, total float64) int {
	t.Helper()
	row, ok := g.rows[metric]
	if !ok {
		return 0
	}
	if float64(row.BaseCount) != hits || float64(row.BaseN) != total {
		t.Errorf("diff %s: %d of %d, the metrics say %v of %v", metric, row.BaseCount, row.BaseN, hits, total)
	}
	return 1
}

func mustAgg(t *testing.T, src string) *metrics.Aggregate {
	t.Helper()
	a, err := metrics.ParseAggregate(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return a
}

func metricRows(t *testing.T, db *metrics.DB, name string) map[string][]any {
	t.Helper()
	tab, err := db.Metric(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]any{}
	for _, r := range tab.Rows {
		out[fmt.Sprint(r[0])] = r
	}
	return out
}

func allSessions(t *testing.T, db *metrics.DB) []string {
	t.Helper()
	tab, err := db.Query(context.Background(), "SELECT session FROM sessions ORDER BY session")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range tab.Rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	return slices.Compact(out)
}

func queryRow(t *testing.T, db *metrics.DB, q string) []any {
	t.Helper()
	tab, err := db.Query(context.Background(), q)
	if err != nil || len(tab.Rows) != 1 {
		t.Fatalf("%s: %v (%d rows)", q, err, len(tab.Rows))
	}
	return tab.Rows[0]
}

func num(v any) float64 {
	f, ok := metrics.ValueNumber(v)
	if !ok {
		return math.NaN()
	}
	return f
}

// near compares two values of one number computed two ways: the metrics
// round a percentile to the microsecond.
func near(a, b float64) bool { return math.Abs(a-b) <= 0.0005+1e-9*math.Abs(b) }
