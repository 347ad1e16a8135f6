package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// labelOverlaps is run in the page: for every timeline, the pairs of
// texts whose boxes overlap, and the texts drawn beside a bar that cover
// another bar, each said as "session: label × label". A box is the
// browser's own (getBoundingClientRect), so the fonts the page really
// uses decide, not the widths the renderer assumed.
const labelOverlaps = `(() => {
	const out = [];
	const cut = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
	for (const svg of document.querySelectorAll('svg.timeline')) {
		const name = svg.querySelector('title').textContent;
		const texts = Array.from(svg.querySelectorAll('text')).map(e => ({e, r: e.getBoundingClientRect()})).filter(t => t.r.width > 0);
		const bars = Array.from(svg.querySelectorAll('rect[class^="c-"]')).map(e => ({e, r: e.getBoundingClientRect()}));
		for (let i = 0; i < texts.length; i++) {
			for (let j = i + 1; j < texts.length; j++) {
				if (cut(texts[i].r, texts[j].r)) out.push(name + ': ' + texts[i].e.textContent + ' × ' + texts[j].e.textContent);
			}
			if (texts[i].e.classList.contains('in')) continue;
			for (const b of bars) {
				if (b.e.parentNode !== texts[i].e.parentNode && cut(texts[i].r, b.r)) out.push(name + ': ' + texts[i].e.textContent + ' × bar ' + b.e.querySelector('title').textContent);
			}
		}
	}
	return out;
})()`

// TestTheReportOf2000SessionsStaysReadableInARealBrowser opens the report
// of a 2,000-session corpus with planted faults in headless Chromium:
// the findings are grouped by detector, collapsed, with their counts, and
// no label of any timeline overlaps another label or a bar it does not
// belong to. Screenshots of the findings and of the first timeline are
// written as in TestTheReportWorksInARealBrowser.
func TestTheReportOf2000SessionsStaysReadableInARealBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium binary (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome): apt-get install -y chromium to run this test")
	}
	if testing.Short() {
		t.Skip("a corpus of 2000 sessions")
	}
	db, rep, live := load(t, corpus(t, 2000, true))
	m, err := Gather(context.Background(), db, rep, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.FindingGroups) < 2 || len(m.Findings) <= FindingsShown {
		t.Fatalf("%d findings in %d groups: the corpus does not test grouping", len(m.Findings), len(m.FindingGroups))
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
	t.Logf("report of 2000 sessions: %d KB, %d findings in %d groups, %d timelines", buf.Len()/1024, len(m.Findings), len(m.FindingGroups), len(m.Detailed))

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
	)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	watchdog := time.AfterFunc(3*time.Minute, cancelTab)
	defer watchdog.Stop()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady("main")); err != nil {
		t.Fatalf("open %s: %v", file, err)
	}

	type group struct {
		Open    bool   `json:"open"`
		Summary string `json:"summary"`
		Shown   int    `json:"shown"`
	}
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[[]group](`Array.from(document.querySelectorAll('#findings details.group')).map(d => ({
		open: d.open, summary: d.querySelector('summary').textContent, shown: d.querySelectorAll('.finding').length}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != len(m.FindingGroups) {
		t.Fatalf("the page has %d detector groups, the model %d", len(groups), len(m.FindingGroups))
	}
	for i, g := range groups {
		mg := m.FindingGroups[i]
		if g.Open || g.Shown != len(mg.Shown) || g.Shown > FindingsShown || !strings.Contains(g.Summary, mg.Detector) || !strings.Contains(g.Summary, thousands(int64(mg.Count))+" findings in ") {
			t.Errorf("group %d: %+v, want %s closed with %d findings counted and %d shown", i, g, mg.Detector, mg.Count, len(mg.Shown))
		}
	}

	texts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.timeline text.cl').length`))
	if err != nil {
		t.Fatal(err)
	}
	if texts == 0 {
		t.Fatal("no call label in any timeline: the overlap check would check nothing")
	}
	overlaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](labelOverlaps))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range overlaps {
		if i == 10 {
			t.Errorf("… %d overlaps in all", len(overlaps))
			break
		}
		t.Errorf("overlap: %s", o)
	}
	// The check can fail: two labels drawn at one place overlap.
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const svg = document.querySelector('svg.timeline');
		const a = svg.querySelector('text.cl').cloneNode(true);
		svg.appendChild(a); svg.appendChild(a.cloneNode(true));
		return `+labelOverlaps+`.length;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if bad == 0 {
		t.Error("two labels at one place are not reported: the overlap check proves nothing")
	}

	shots := os.Getenv("RETRACE_REPORT_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	// The whole page of 2000 sessions is too tall for one screenshot:
	// the findings and the first timeline, the parts this test checks.
	for name, sel := range map[string]string{"report-2000-findings.png": "#findings", "report-2000-timeline.png": "section.session"} {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(shots, name)
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d KB)", shot, len(png)/1024)
	}
}
