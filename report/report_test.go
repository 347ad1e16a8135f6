package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// corpus writes a synthetic corpus of n sessions, with up to six kinds of
// planted faults (lost calls, denial loops, ...) when faults is true, and
// returns its directory.
func corpus(t testing.TB, n int, faults bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runs")
	opts := synth.Options{Sessions: n, Seed: 16}
	if faults {
		opts.Faults = []string{"lost_call", "denial_loop", "hallucinated_tool", "low_yield_spin", "empty_output_unexplained", "truncation_unannounced"}[:min(6, n/4)]
	}
	if _, err := synth.Write(context.Background(), dir, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

// load loads paths the way retrace report does: the detectors in the
// load's pass, then the liveness table.
func load(t testing.TB, paths ...string) (*metrics.DB, detectors.Report, detectors.Liveness) {
	t.Helper()
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rep, live, _, err := detectors.DetectLiveness(ctx, db, paths, detectors.Catalog(), detectors.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db, rep, live
}

func metric(t *testing.T, db *metrics.DB, name string) [][]any {
	t.Helper()
	tab, err := db.Metric(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tab.Rows
}

func TestTheModelCountsWhatRetraceMetricsCounts(t *testing.T) {
	db, rep, live := load(t, corpus(t, 40, true))
	m, err := Gather(context.Background(), db, rep, live, Options{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	funnel := map[string]FunnelRow{}
	for _, r := range m.Funnel {
		funnel[r.Tool] = r
	}
	rows := metric(t, db, "funnel")
	if len(rows) != len(m.Funnel) {
		t.Fatalf("the funnel metric has %d rows, the report %d", len(rows), len(m.Funnel))
	}
	for _, r := range rows {
		got, ok := funnel[toString(r[0])]
		if !ok {
			t.Fatalf("tool %v of the funnel metric is not in the report", r[0])
		}
		want := FunnelRow{Calls: toInt(r[1]), Denied: toInt(r[2]), Executed: toInt(r[3]), Successes: toInt(r[4]), Failures: toInt(r[5]), Lost: toInt(r[6])}
		if got.Calls != want.Calls || got.Denied != want.Denied || got.Executed != want.Executed || got.Successes != want.Successes || got.Failures != want.Failures || got.Lost != want.Lost {
			t.Errorf("%v: report calls/denied/ran/successes/failures/lost %d/%d/%d/%d/%d/%d, metric %d/%d/%d/%d/%d/%d", r[0],
				got.Calls, got.Denied, got.Executed, got.Successes, got.Failures, got.Lost, want.Calls, want.Denied, want.Executed, want.Successes, want.Failures, want.Lost)
		}
		if got.Allowed+got.Denied+got.Undecided != got.Calls {
			t.Errorf("%v: allowed %d + denied %d + undecided %d is not the %d calls", r[0], got.Allowed, got.Denied, got.Undecided, got.Calls)
		}
		if got.Successes+got.ExecFailures != got.Executed {
			t.Errorf("%v: successes %d + failures while running %d is not the %d executed", r[0], got.Successes, got.ExecFailures, got.Executed)
		}
	}
	if all := funnel["(all)"]; all.Calls != m.Summary.Calls || all.Failures != m.Summary.Failures || all.Failures == 0 {
		t.Errorf("the summary's calls/failures %d/%d differ from the funnel's %d/%d (or nothing failed)", m.Summary.Calls, m.Summary.Failures, all.Calls, all.Failures)
	}

	kinds := map[string]int64{}
	for _, r := range m.FailureKinds {
		kinds[r.Kind] += r.Failures
	}
	rows = metric(t, db, "failure_kinds")
	if len(rows) != len(kinds) {
		t.Errorf("the failure_kinds metric has %d kinds, the report %d", len(rows), len(kinds))
	}
	for _, r := range rows {
		if kinds[toString(r[0])] != toInt(r[1]) {
			t.Errorf("failure kind %v: report %d, metric %d", r[0], kinds[toString(r[0])], toInt(r[1]))
		}
	}

	rows = metric(t, db, "latency")
	if len(rows) != len(m.Latency) {
		t.Fatalf("the latency metric has %d tools, the report %d", len(rows), len(m.Latency))
	}
	lat := map[string]ToolLatency{}
	for _, l := range m.Latency {
		lat[l.Tool] = l
	}
	for _, r := range rows {
		l := lat[toString(r[0])]
		if l.N != toInt(r[1]) || l.P50 != toFloat(r[2]) || l.P95 != toFloat(r[3]) || int64(len(l.Durations)) != l.N {
			t.Errorf("latency of %v: report n=%d p50=%v p95=%v (%d durations), metric %v %v %v", r[0], l.N, l.P50, l.P95, len(l.Durations), r[1], r[2], r[3])
		}
	}

	var sessions int64
	for _, r := range m.EndReasons {
		sessions += r.Sessions
	}
	if sessions != 40 || m.Summary.Sessions != 40 {
		t.Errorf("end reasons count %d sessions and the summary %d, want 40", sessions, m.Summary.Sessions)
	}
	var events int64
	for _, r := range metric(t, db, "permissions") {
		events += toInt(r[3])
	}
	if m.Permissions.Events != events || m.Permissions.AllowsTotal+m.Permissions.Prompts+m.Permissions.Denials != events {
		t.Errorf("permission events: report %d (%d+%d+%d), metric %d", m.Permissions.Events, m.Permissions.AllowsTotal, m.Permissions.Prompts, m.Permissions.Denials, events)
	}
	if len(m.Findings) != len(rep.Findings) || len(m.Findings) == 0 {
		t.Errorf("the report has %d findings, the detectors found %d (and a corpus with planted faults has some)", len(m.Findings), len(rep.Findings))
	}
	if len(m.Detailed) != 10 || len(m.Others) != 30 {
		t.Errorf("--top 10 of 40 sessions: %d in full and %d as rows, want 10 and 30", len(m.Detailed), len(m.Others))
	}
}

func TestSessionsWithFindingsComeFirstAndEveryEventHasAnAnchor(t *testing.T) {
	db, rep, live := load(t, corpus(t, 12, true))
	m, err := Gather(context.Background(), db, rep, live, Options{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(m.Detailed); i++ {
		if m.Detailed[i].Findings > m.Detailed[i-1].Findings {
			t.Errorf("session %d has %d findings, more than the one before it (%d)", i, m.Detailed[i].Findings, m.Detailed[i-1].Findings)
		}
	}
	for _, o := range m.Others {
		if o.Findings > m.Detailed[len(m.Detailed)-1].Findings {
			t.Errorf("session %s with %d findings is summarised while one with fewer is shown in full", o.ID, o.Findings)
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, m); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	// Every event of a session shown in full has an element, so any
	// evidence resolves.
	d := m.Detailed[0]
	var events int64
	for _, r := range mustQuery(t, db, "SELECT count(*) FROM raw_events WHERE session = '"+d.ID+"'") {
		events = toInt(r[0])
	}
	for seq := int64(1); seq <= events; seq++ {
		if !strings.Contains(html, `id="`+eventAnchor(d.ID, seq)+`"`) {
			t.Errorf("event seq %d of session %s has no element to link to", seq, d.ID)
		}
	}
	for _, href := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(html, `id="`+href[1]+`"`) {
			t.Errorf("link #%s leads nowhere", href[1])
		}
	}
}

func mustQuery(t *testing.T, db *metrics.DB, q string) [][]any {
	t.Helper()
	tab, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return tab.Rows
}

// TestTrajectoryTextCannotAddMarkup plants script, style and attribute
// breakers in every text of a recording a report shows, and checks that
// the page holds them as text only.
func TestTrajectoryTextCannotAddMarkup(t *testing.T) {
	dir := corpus(t, 3, false)
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	evil := `</style><script>alert(1)</script><img src=x onerror=alert(2)>"'`
	quoted := strings.ReplaceAll(strings.ReplaceAll(evil, `"`, `\"`), `/`, `\/`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Model text, tool inputs and outputs, the user's prompt and
		// reminders are all strings in the JSON: append the breaker to
		// each "text" and each "file_path" and "command".
		s := regexp.MustCompile(`"(text|file_path|command)":"`).ReplaceAllString(string(b), `"$1":"`+strings.ReplaceAll(quoted, "$", "$$"))
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, rep, live := load(t, dir)
	m, err := Gather(context.Background(), db, rep, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, m); err != nil {
		t.Fatal(err)
	}
	assertNoInjection(t, buf.String())
	if !strings.Contains(buf.String(), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the planted text is not in the page as escaped text: the test planted nothing")
	}
}

// assertNoInjection fails when page holds markup it should not: a script
// or any element that loads something, an event handler, a link that
// leaves the page, a second stylesheet, or any URL.
func assertNoInjection(t testing.TB, page string) {
	t.Helper()
	if err := checkMarkup(page); err != nil {
		t.Error(err)
	}
	if u := regexp.MustCompile(`(?i)\b(https?|ftp|javascript|file):/|\bdata:[a-z]+/`).FindString(page); u != "" {
		t.Errorf("the page holds a URL (%s…): it must load nothing", u)
	}
}

// checkMarkup tokenizes page as a browser would and returns what it finds
// that a report must not hold.
func checkMarkup(page string) error {
	z := html.NewTokenizer(strings.NewReader(page))
	styles := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				if styles != 1 {
					return fmt.Errorf("the page holds %d style elements, want its own only", styles)
				}
				return nil
			}
			return z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "img", "iframe", "object", "embed", "link", "base", "form", "input", "image", "use", "foreignobject", "audio", "video", "source":
				return fmt.Errorf("the page holds a <%s> element", tok.Data)
			case "style":
				styles++
			}
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(key, "on"):
					return fmt.Errorf("<%s> has an event handler %s", tok.Data, a.Key)
				case key == "src" || key == "xlink:href" || key == "action" || key == "srcset":
					return fmt.Errorf("<%s> has %s=%q", tok.Data, a.Key, a.Val)
				case key == "href" && !strings.HasPrefix(a.Val, "#"):
					return fmt.Errorf("<%s> links out of the page: href=%q", tok.Data, a.Val)
				case key == "style" && strings.Contains(strings.ToLower(a.Val), "url("):
					return fmt.Errorf("<%s> loads from its style: %q", tok.Data, a.Val)
				}
			}
		}
	}
}

// FuzzRender renders a model whose every string is the fuzzer's and checks
// that no input adds markup to the page.
func FuzzRender(f *testing.F) {
	f.Add(`</style><script>alert(1)</script>`)
	f.Add(`"><svg onload=alert(1)>`)
	f.Add("\x00\xff</title>]]>")
	f.Fuzz(func(t *testing.T, s string) {
		m := &Model{Title: s, Top: 1,
			Summary:      Summary{Sessions: 1, Calls: 1, Failures: 1},
			EndReasons:   []EndReason{{Reason: s, Sessions: 1, Share: 1}},
			Funnel:       []FunnelRow{{Tool: "(all)", Calls: 1, Failures: 1}, {Tool: s, Calls: 1, Failures: 1}},
			Latency:      []ToolLatency{{Tool: s, N: 2, P50: 1, P95: 2, Durations: []float64{1, 2}}},
			FailureKinds: []FailureKindRow{{Tool: s, Kind: s, Failures: 1}},
			Permissions:  Permissions{Decisions: []PermissionRow{{Decision: s, Source: s, Decisions: 1}}, Allows: []Count{{Name: s, N: 1}}, Events: 1, AllowsTotal: 1},
			Defenses:     []DefenseRow{{Defense: s, SessionsEnabled: 1}},
			Findings: []FindingView{{Finding: detectors.Finding{Detector: s, Severity: detectors.Severity(s), Title: s, Session: s, Message: s, NextStep: s, ToolUseID: s},
				Anchor: "f-1", SessionHref: "#" + sessionAnchor(s), Evidence: []EvidenceView{{Evidence: detectors.Evidence{File: s, Line: 1, Seq: 1, Type: s}, Href: "#" + eventAnchor(s, 1)}}}},
			Detailed: []SessionDetail{{SessionRow: SessionRow{ID: s, File: s, Reason: s, Model: s, Tags: []string{s}, Anchor: sessionAnchor(s)}, Prompt: s,
				TurnList: []Turn{{N: 1, Anchor: eventAnchor(s, 2), StopReason: s, Text: s, ModelMs: 1,
					Marks: []Mark{{Kind: s, Label: s, Text: s, Anchor: eventAnchor(s, 3)}},
					Calls: []Call{{ID: s, Tool: s, Anchor: eventAnchor(s, 4), Input: s, Output: s, Outcome: s, FailureKind: s, ErrorCode: s, Permission: s, PermissionSource: s, DurationMs: 1, Measured: true, EndUs: 1000}}}}}},
			Others: []SessionRow{{ID: s + "x", File: s, Reason: s, Anchor: sessionAnchor(s + "x")}},
		}
		var buf bytes.Buffer
		if err := Render(&buf, m); err != nil {
			t.Fatal(err)
		}
		if err := checkMarkup(buf.String()); err != nil {
			t.Fatalf("input %q: %v", s, err)
		}
	})
}

func TestTheDiffPageShowsEveryRowRegressionsFirstAndLoadsNothing(t *testing.T) {
	var buf bytes.Buffer
	r := sampleDiff()
	if err := RenderDiff(&buf, r, ""); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	assertNoInjection(t, page)
	rows := regexp.MustCompile(`<tr class="row-(\w+)">`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range rows {
		got = append(got, m[1])
	}
	if want := "regressed improved inconclusive unchanged"; strings.Join(got, " ") != want {
		t.Errorf("rows in the order %v, want %s", got, want)
	}
	for _, want := range []string{"runs/before", "runs/after", "Holm", "clean", "lost_call", "fewer than 5 samples", "rate(failure) &lt;= base &#43; 0.02"} {
		if !strings.Contains(page, want) {
			t.Errorf("the diff page lacks %q", want)
		}
	}
}

// FuzzRenderDiff renders a diff whose every string is the fuzzer's and
// checks that no input adds markup to the page.
func FuzzRenderDiff(f *testing.F) {
	f.Add(`</style><script>alert(1)</script>`)
	f.Add(`"><svg onload=alert(1)>`)
	f.Fuzz(func(t *testing.T, s string) {
		r := sampleDiff()
		r.Base.Label, r.Cand.Label, r.Base.Results = s, s, s
		for i := range r.Rows {
			r.Rows[i].Metric, r.Rows[i].Denominator, r.Rows[i].Test.Name = s, s, s
			r.Rows[i].Verdict = diff.Verdict(s)
		}
		r.Skipped[0].Reason, r.Paired.Flips[0].Scenario, r.Paired.Flips[0].To = s, s, s
		r.Findings.New[0].Message, r.Findings.New[0].Detector, r.Findings.New[0].Evidence[0].File = s, s, s
		r.Gates[0].Gate, r.Gates[0].Detail, r.Gates[0].Status = s, s, diff.GateStatus(s)
		var buf bytes.Buffer
		if err := RenderDiff(&buf, r, s); err != nil {
			t.Fatal(err)
		}
		if err := checkMarkup(buf.String()); err != nil {
			t.Fatalf("input %q: %v", s, err)
		}
	})
}

func TestCallsThatOverlapGetLanesOfTheirOwnAndSequentialCallsShareOne(t *testing.T) {
	// Three reads in one parallel batch (0–3 ms, 0–1 ms, 1–2 ms), then an
	// edit after them (3–5 ms).
	calls := []Call{
		{Tool: "read", EndUs: 3000, DurationMs: 3},
		{Tool: "read", EndUs: 1000, DurationMs: 1},
		{Tool: "read", EndUs: 2000, DurationMs: 1},
		{Tool: "edit", EndUs: 5000, DurationMs: 2},
	}
	lane, n := lanes(calls)
	if n != 2 {
		t.Fatalf("%d lanes, want 2 (at most two calls run at once)", n)
	}
	if lane[0] == lane[1] || lane[1] != lane[2] || lane[3] != lane[0] {
		t.Errorf("lanes %v: the long read needs its own lane, the two short reads run one after the other on the second, and the edit follows the long read", lane)
	}
	svg := string(timelineSVG(SessionDetail{SessionRow: SessionRow{ID: "s"}, TurnList: []Turn{{N: 1, Calls: calls}}}))
	if got := strings.Count(svg, `<rect x=`) - 1; got != 4 {
		t.Errorf("the timeline draws %d call bars, want one per call (4)", got)
	}
}
