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

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("RETRACE_REPORT_SCREENSHOTS")
	if shots == "" {
		shots = dir
	}
	shot := filepath.Join(shots, "report.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d KB)", shot, len(png)/1024)

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the browser reported %s", p)
	}
	for _, r := range requests {
		if r != url {
			t.Errorf("the page requested %s; it must load nothing but itself", r)
		}
	}
	if !strings.HasPrefix(strings.Join(requests, " "), url) {
		t.Errorf("the browser's requests %v do not include the report itself: the network check saw nothing", requests)
	}
}
