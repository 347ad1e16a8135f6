package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/stats"
)

// chromium returns the path of a Chromium or Chrome binary, or "".
func chromium() string {
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestTheReportWorksInARealBrowser opens a report from a file:// URL in
// headless Chromium and checks what a person opening it would meet: no
// console error or exception, no request for anything but the file, the
// charts in their sections, and every in-page link leading to an element.
// It writes a screenshot of the whole page to $RETRACE_REPORT_SCREENSHOTS
// (a directory) or the test's temporary directory, and logs its path.
func TestTheReportWorksInARealBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium binary (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome): apt-get install -y chromium to run this test")
	}
	db, rep, live := load(t, corpus(t, 24, true))
	m, err := Gather(context.Background(), db, rep, live, Options{Top: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Findings) == 0 {
		t.Fatal("the corpus has planted faults and the report no finding: nothing to link to")
	}
	var buf bytes.Buffer
	if err := Render(&buf, m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + file
	var dbuf bytes.Buffer
	if err := RenderDiff(&dbuf, sampleDiff(), "retrace diff"); err != nil {
		t.Fatal(err)
	}
	diffFile := filepath.Join(dir, "diff.html")
	if err := os.WriteFile(diffFile, dbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	diffURL := "file://" + diffFile

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// Without these the closed network of a CI machine makes Chromium
		// slow and noisy, retrying the services it calls home to.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
	)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	// The timeout is on a watchdog, not on the browser's own context: a
	// hung browser fails the test instead of hanging it.
	watchdog := time.AfterFunc(2*time.Minute, cancelTab)
	defer watchdog.Stop()

	var mu sync.Mutex
	var problems, requests []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(ev.Type))
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, "log "+string(ev.Entry.Level)+": "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	}); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("main")); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}

	svgs, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`Object.fromEntries(
		Array.from(document.querySelectorAll('section.card')).map(s => [s.id, s.querySelectorAll('svg').length]))`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"summary": 1, "funnel": 1, "latency": len(m.Latency), "failures": 1, "permissions": 1, "defenses": 1}
	for id, n := range want {
		if svgs[id] < n || n == 0 {
			t.Errorf("section #%s shows %d charts, want %d (charts per section: %v)", id, svgs[id], n, svgs)
		}
	}
	for _, d := range m.Detailed {
		if svgs[d.Anchor] != 1 {
			t.Errorf("session %s shows %d timelines, want 1", d.ID, svgs[d.Anchor])
		}
	}
	dangling, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href^="#"]'))
		.map(a => a.getAttribute('href').slice(1)).filter(id => !document.getElementById(id))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(dangling) > 0 {
		t.Errorf("%d in-page links lead nowhere, first #%s", len(dangling), dangling[0])
	}
	evidence, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('ul.evidence a[href^="#e-"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if evidence == 0 {
		t.Error("no finding's evidence links to an event: the anchors test checked nothing")
	}

	shots := os.Getenv("RETRACE_REPORT_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	screenshot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(shots, name)
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d KB)", shot, len(png)/1024)
	}
	screenshot("report.png")

	// The diff report: its interval charts, one per row, and no link out.
	if err := chromedp.Do(ctx, chromedp.Navigate(diffURL), chromedp.WaitReady("main")); err != nil {
		t.Fatalf("open %s: %v", diffURL, err)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#metrics svg.ci').length`))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(sampleDiff().Rows); charts != want {
		t.Errorf("the diff report draws %d intervals, want one per row (%d)", charts, want)
	}
	screenshot("diff.png")

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the browser reported %s", p)
	}
	for _, r := range requests {
		if r != url && r != diffURL {
			t.Errorf("the page requested %s; it must load nothing but itself", r)
		}
	}
	if !strings.HasPrefix(strings.Join(requests, " "), url) {
		t.Errorf("the browser's requests %v do not include the report itself: the network check saw nothing", requests)
	}
}

// sampleDiff is a diff result with a row of each verdict, a skipped
// metric, paired scenarios and findings, for the pages' tests.
func sampleDiff() *diff.Result {
	ci := func(lo, hi float64) stats.Interval { return stats.Interval{Lo: lo, Hi: hi, Level: 0.95} }
	test := stats.Test{Name: stats.NameFisher, P: 0.01}
	f := detectors.Finding{Detector: "lost_call", Severity: detectors.SeverityError, Title: "a call that never ended", Session: "s1",
		Message: "tool_call without a result", Evidence: []detectors.Evidence{{File: "b/s1.jsonl", Line: 4, Seq: 4, Type: "tool_call"}}}
	return &diff.Result{
		Base: diff.Side{Label: "runs/before", Sessions: 200, ToolCalls: 3000}, Cand: diff.Side{Label: "runs/after", Sessions: 200, ToolCalls: 3100},
		Alpha: 0.05, Correction: "holm", Resamples: 2000, Seed: 1,
		Rows: []diff.Row{
			{Metric: "rate(failure, tool=bash, among=executed)", Kind: diff.KindRate, Unit: "fraction", Denominator: "executed bash calls", Base: 0.1, Cand: 0.15, Diff: 0.05, BaseN: 500, CandN: 510, CI: ci(0.02, 0.08), Test: test, PAdjusted: 0.02, MinEffect: 0.01, Verdict: diff.VerdictRegressed, Better: diff.BetterLower},
			{Metric: "p95(duration, tool=read)", Kind: diff.KindDistribution, Unit: "ms", Denominator: "measured read calls", Base: 3, Cand: 2, Diff: -1, BaseN: 900, CandN: 880, CI: ci(-1.5, -0.5), Test: test, PAdjusted: 0.01, MinEffect: 0.1, Relative: true, Verdict: diff.VerdictImproved, Better: diff.BetterLower},
			{Metric: "mean(turns)", Kind: diff.KindMean, Denominator: "sessions", Base: 8, Cand: 8.2, Diff: 0.2, BaseN: 200, CandN: 200, CI: ci(-0.6, 1), Test: test, PAdjusted: 0.6, MinEffect: 0.1, Relative: true, Verdict: diff.VerdictInconclusive},
			{Metric: "rate(prompted)", Kind: diff.KindRate, Unit: "fraction", Denominator: "tool calls", Base: 0.05, Cand: 0.05, Diff: 0, BaseN: 3000, CandN: 3100, CI: ci(-0.004, 0.004), Test: test, PAdjusted: 1, MinEffect: 0.01, Verdict: diff.VerdictUnchanged},
		},
		Skipped:  []diff.Skipped{{Metric: "p95(duration, tool=web_search)", Reason: "fewer than 5 samples on a side"}},
		Paired:   &diff.Paired{Scenarios: 10, PassFail: 1, Test: stats.Test{Name: stats.NameMcNemarExact, P: 1}, Verdict: diff.VerdictInconclusive, Flips: []diff.Flip{{Scenario: "clean", From: "pass", To: "fail"}}},
		Findings: diff.Findings{New: []detectors.Finding{f}, Resolved: []detectors.Finding{}},
		Gates:    []diff.GateResult{{Gate: "rate(failure) <= base + 0.02", Status: diff.GatePass, Detail: "interval within the bound"}},
	}
}
