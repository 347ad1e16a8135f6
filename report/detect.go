package report

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/terminal"
)

// WriteLiveness writes the defense liveness table in format (table,
// markdown or json), then for each dead defense the
// sessions and lines where its condition held.
func WriteLiveness(w io.Writer, format string, lv detectors.Liveness) error {
	if format == "json" {
		if lv.Defenses == nil {
			lv.Defenses = []detectors.DefenseLiveness{}
		}
		return WriteJSON(w, lv)
	}
	// The terminal table leaves the conditions' text out, so that it fits
	// a CI log; markdown and json have it.
	t := metrics.Table{Columns: []string{"defense", "verdict", "sessions", "triggers", "checked", "condition held", "held in sessions", "missed sessions", "condition"}}
	if format != "markdown" {
		t.Columns = t.Columns[:len(t.Columns)-1]
	}
	for _, r := range lv.Defenses {
		checked, held := any(int64(r.Checked)), any(int64(r.Held))
		if !r.Observable {
			checked, held = "-", "-"
		}
		row := []any{string(r.Defense), string(r.Verdict), int64(r.Sessions), int64(r.Triggers),
			checked, held, int64(len(r.HeldSessions)), int64(len(r.Missed)), r.Condition}
		t.Rows = append(t.Rows, row[:len(t.Columns)])
	}
	if format == "markdown" {
		fmt.Fprintf(w, "## defense liveness: %s\n\n", plural(lv.Sessions, "session"))
	} else {
		fmt.Fprintf(w, "== defense liveness: %s ==\n", plural(lv.Sessions, "session"))
	}
	if err := WriteTable(w, format, t); err != nil {
		return err
	}
	for _, r := range lv.Defenses {
		if r.Verdict != detectors.VerdictDead {
			continue
		}
		f := detectors.Finding{Evidence: r.Evidence}
		fmt.Fprintf(w, "\n%s is dead: its condition held in %s without a trigger, first at %s\n", r.Defense, plural(len(r.Missed), "session"), where(f, ""))
	}
	return nil
}

// WriteDetectorList documents ds in format (table, markdown, json or
// sarif, whose tool is retrace at version); each threshold is shown with the value
// in force, which settings may have changed from the default.
func WriteDetectorList(w io.Writer, format string, ds []detectors.Detector, settings detectors.Settings, version string) error {
	var infos []detectors.Info
	for _, d := range ds {
		in := d.Info()
		in.Thresholds = slices.Clone(in.Thresholds)
		for i, t := range in.Thresholds {
			if v, ok := settings[in.ID][t.Name]; ok {
				in.Thresholds[i].Value = &v
			}
		}
		infos = append(infos, in)
	}
	switch format {
	case "json":
		return WriteJSON(w, infos)
	case "sarif":
		return WriteJSON(w, sarifLog(detectors.Report{Detectors: infos, Findings: []detectors.Finding{}}, version))
	case "markdown":
		t := metrics.Table{Columns: []string{"id", "severity", "title", "what it means", "thresholds", "next step"}}
		for _, in := range infos {
			var ts []string
			for _, th := range in.Thresholds {
				ts = append(ts, thresholdText(th))
			}
			t.Rows = append(t.Rows, []any{in.ID, string(in.Severity), in.Title, in.About, strings.Join(ts, "; "), in.NextStep})
		}
		return WriteTable(w, "markdown", t)
	}
	for i, in := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s): %s\n", in.ID, in.Severity, in.Title)
		fmt.Fprintf(w, "  %s\n", in.About)
		for _, th := range in.Thresholds {
			fmt.Fprintf(w, "  threshold %s\n", thresholdText(th))
		}
		fmt.Fprintf(w, "  next step: %s\n", in.NextStep)
	}
	return nil
}

// thresholdText renders a threshold as "name = value (default d): doc".
func thresholdText(t detectors.Threshold) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if t.Value != nil && *t.Value != t.Default {
		return fmt.Sprintf("%s = %s (default %s): %s", t.Name, num(*t.Value), num(t.Default), t.Doc)
	}
	return fmt.Sprintf("%s = %s: %s", t.Name, num(t.Default), t.Doc)
}

// WriteJSON writes v as indented JSON and a newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// DetectJSON is the document detect writes with --format json.
type DetectJSON struct {
	detectors.Report
	// Counts has the number of findings of every detector that ran.
	Counts map[string]int `json:"counts"`
}

// DetectOptions are the options of WriteDetect.
type DetectOptions struct {
	// Limit is the number of findings table and markdown show (0: all);
	// json, sarif and github always have all.
	Limit int
	// Version is retrace's version, which SARIF names as the tool's.
	Version string
	// Dir is the working directory: the table and markdown show the
	// trajectories under it by their path relative to it, so that a
	// finding's place fits a CI log's line ("" keeps paths as found).
	Dir string
}

// WriteDetect writes what the detectors found in format: table or
// markdown (counts per detector, the worst findings, the next steps),
// json (one document: detectors, findings, counts), sarif (SARIF 2.1.0)
// or github (workflow annotations).
func WriteDetect(w io.Writer, format string, rep detectors.Report, opts DetectOptions) error {
	limit := opts.Limit
	switch format {
	case "json":
		counts := map[string]int{}
		for _, in := range rep.Detectors {
			counts[in.ID] = 0
		}
		for id, n := range rep.Counts() {
			counts[id] = n
		}
		return WriteJSON(w, DetectJSON{Report: rep, Counts: counts})
	case "sarif":
		return WriteJSON(w, sarifLog(rep, opts.Version))
	case "github":
		return writeGitHub(w, rep)
	}
	// What findings say comes from the trajectories: safe for a terminal
	// (writeTable escapes each cell as well).
	w = terminal.NewWriter(w)
	// table and markdown: counts per detector first, then the worst
	// findings (Findings are sorted worst first), then the next steps.
	// A detector's findings can be of several severities (a hallucinated
	// tool answered not_found is info, one that ran is an error), so the
	// counts are per severity, not under the detector's default.
	counts, sessions := rep.Counts(), map[string]map[string]bool{}
	bySeverity := map[string]map[detectors.Severity]int64{}
	for _, f := range rep.Findings {
		if sessions[f.Detector] == nil {
			sessions[f.Detector] = map[string]bool{}
			bySeverity[f.Detector] = map[detectors.Severity]int64{}
		}
		sessions[f.Detector][f.Session] = true
		bySeverity[f.Detector][f.Severity]++
	}
	// Only the detectors that found something get a row; the others,
	// most of the catalog on a healthy corpus, are one line.
	sum := metrics.Table{Columns: []string{"detector", "errors", "warnings", "info", "sessions"}}
	var quiet []string
	for _, in := range rep.Detectors {
		n, ok := bySeverity[in.ID]
		if !ok {
			quiet = append(quiet, in.ID)
			continue
		}
		sum.Rows = append(sum.Rows, []any{in.ID, n[detectors.SeverityError], n[detectors.SeverityWarning], n[detectors.SeverityInfo], int64(len(sessions[in.ID]))})
	}
	heading := func(s string) {
		if format == "markdown" {
			fmt.Fprintf(w, "## %s\n\n", s)
		} else {
			fmt.Fprintf(w, "== %s ==\n", s)
		}
	}
	var total [4]int
	for _, f := range rep.Findings {
		total[f.Severity.Rank()]++
	}
	heading(fmt.Sprintf("detectors: %s in %s, %s (%s, %s, %d info)", plural(len(rep.Findings), "finding"), plural(rep.Sessions, "session"), plural(rep.Events, "event"),
		plural(total[detectors.SeverityError.Rank()], "error"), plural(total[detectors.SeverityWarning.Rank()], "warning"), total[detectors.SeverityInfo.Rank()]))
	if len(sum.Rows) > 0 {
		if err := WriteTable(w, format, sum); err != nil {
			return err
		}
	}
	if len(quiet) > 0 {
		line := fmt.Sprintf("nothing found by %s: %s", plural(len(quiet), "detector"), strings.Join(quiet, ", "))
		if format == "markdown" {
			fmt.Fprintf(w, "\n%s\n", MarkdownText(line))
		} else {
			fmt.Fprintln(w, ellipsis(line, MaxWidth))
		}
	}
	if len(rep.Findings) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	shown := rep.Findings
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	heading("findings, worst first")
	if format == "markdown" {
		t := metrics.Table{Columns: []string{"severity", "detector", "where", "session", "turn", "message"}}
		for _, f := range shown {
			t.Rows = append(t.Rows, []any{string(f.Severity), f.Detector, where(f, opts.Dir), f.Session, int64(f.Turn), f.Message})
		}
		if err := WriteTable(w, format, t); err != nil {
			return err
		}
	} else {
		// A finding's place, session and message rarely fit a 120-column
		// table row together: each finding is a line naming it, then
		// where and its message below it, indented and wrapped.
		for _, f := range shown {
			head := terminal.Line(fmt.Sprintf("%-7s %s, turn %d, session %s", strings.ToUpper(string(f.Severity)), f.Detector, f.Turn, f.Session))
			fmt.Fprintln(w, ellipsis(head, MaxWidth))
			fmt.Fprint(w, wrap("        at ", terminal.Line(where(f, opts.Dir)), MaxWidth, "           "))
			fmt.Fprint(w, wrap("        ", terminal.Line(f.Message), MaxWidth, "        "))
		}
	}
	if cut := len(rep.Findings) - len(shown); cut > 0 {
		fmt.Fprintf(w, "(%s not shown; --limit 0 shows all, json, sarif and github always do)\n", plural(cut, "finding"))
	}
	fmt.Fprintln(w)
	heading("next steps")
	for _, in := range rep.Detectors {
		if counts[in.ID] == 0 {
			continue
		}
		if format == "markdown" {
			fmt.Fprintf(w, "- %s: %s\n", in.ID, in.NextStep)
		} else {
			fmt.Fprint(w, wrap("- ", in.ID+": "+in.NextStep, MaxWidth, "  "))
		}
	}
	return nil
}

// where renders a finding's first evidence as file:line, with the other
// evidence lines after it; files under dir are shown relative to it.
func where(f detectors.Finding, dir string) string {
	if len(f.Evidence) == 0 {
		return ""
	}
	s := fmt.Sprintf("%s:%d", relPath(dir, f.Evidence[0].File), f.Evidence[0].Line)
	var more []string
	for _, e := range f.Evidence[1:] {
		if e.File == f.Evidence[0].File {
			more = append(more, fmt.Sprint(e.Line))
		} else {
			more = append(more, fmt.Sprintf("%s:%d", relPath(dir, e.File), e.Line))
		}
	}
	if len(more) > 0 {
		s += " (+" + strings.Join(more, ",") + ")"
	}
	return s + originsOf(f.Evidence)
}

// originsOf renders where imported evidence came from in the client's own
// transcript: " from FILE:LINE (+LINE,...)", or "" when no evidence was
// imported.
func originsOf(ev []detectors.Evidence) string {
	first, firstFile := "", ""
	var more []string
	for _, e := range ev {
		file, line, ok := strings.Cut(e.Origin, ":")
		if i := strings.LastIndexByte(e.Origin, ':'); i > 0 {
			file, line, ok = e.Origin[:i], e.Origin[i+1:], true
		}
		switch {
		case !ok:
		case first == "":
			first, firstFile = e.Origin, file
		case file == firstFile:
			more = append(more, line)
		default:
			more = append(more, e.Origin)
		}
	}
	if first == "" {
		return ""
	}
	s := " from " + first
	if len(more) > 0 {
		s += " (+" + strings.Join(more, ",") + ")"
	}
	return s
}

// writeGitHub prints a GitHub Actions workflow command per finding, so
// the findings show up as annotations on the trajectory files.
func writeGitHub(w io.Writer, rep detectors.Report) error {
	for _, f := range rep.Findings {
		cmd := map[detectors.Severity]string{detectors.SeverityError: "error", detectors.SeverityWarning: "warning"}[f.Severity]
		if cmd == "" {
			cmd = "notice"
		}
		props := []string{}
		if file := f.File(); file != "" {
			props = append(props, "file="+ghProperty(filepath.ToSlash(file)), fmt.Sprintf("line=%d", f.Line()))
		}
		props = append(props, "title="+ghProperty(f.Detector+": "+f.Title))
		msg := f.Message + " (session " + f.Session + "). Next: " + f.NextStep
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", cmd, strings.Join(props, ","), ghData(msg)); err != nil {
			return err
		}
	}
	return nil
}

// ghData escapes a workflow command's message: a line break cannot end
// the command and start another one (::add-mask::, ::stop-commands::), and
// what the runner would pass to the log unescaped (ESC, BEL, bidi
// overrides) is shown escaped (terminal.Line).
func ghData(s string) string {
	return terminal.Line(strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s))
}

// ghProperty escapes a workflow command's property value, which cannot
// end the properties (:, ,) either.
func ghProperty(s string) string {
	return terminal.Line(strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s))
}

// The SARIF 2.1.0 log detect writes: one run, a rule per detector that
// ran, a result per finding located at the trajectory file and line, the
// other evidence as related locations.
type (
	sarifDoc struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		InformationURI string      `json:"informationUri"`
		Version        string      `json:"version"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string       `json:"id"`
		ShortDescription     sarifMessage `json:"shortDescription"`
		FullDescription      sarifMessage `json:"fullDescription"`
		Help                 sarifMessage `json:"help"`
		DefaultConfiguration struct {
			Level string `json:"level"`
		} `json:"defaultConfiguration"`
		Properties map[string]any `json:"properties"`
	}
	sarifMessage struct {
		Text string `json:"text"`
	}
	sarifResult struct {
		RuleID           string          `json:"ruleId"`
		RuleIndex        int             `json:"ruleIndex"`
		Level            string          `json:"level"`
		Message          sarifMessage    `json:"message"`
		Locations        []sarifLocation `json:"locations"`
		RelatedLocations []sarifLocation `json:"relatedLocations,omitempty"`
		Properties       map[string]any  `json:"properties"`
	}
	sarifLocation struct {
		ID               *int          `json:"id,omitempty"`
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
		Message          *sarifMessage `json:"message,omitempty"`
	}
	sarifPhysical struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *sarifRegion `json:"region,omitempty"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
)

// sarifLevel maps a severity onto SARIF's levels.
func sarifLevel(s detectors.Severity) string {
	switch s {
	case detectors.SeverityError:
		return "error"
	case detectors.SeverityWarning:
		return "warning"
	}
	return "note"
}

// sarifURI turns a trajectory path into a URI reference: relative paths
// stay relative (GitHub resolves them against the checkout), absolute
// ones become file URIs.
func sarifURI(path string) string {
	slashed := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // a Windows drive letter
		}
		return (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	return (&url.URL{Path: slashed}).String()
}

func sarifLocationOf(e detectors.Evidence) sarifLocation {
	var l sarifLocation
	l.PhysicalLocation.ArtifactLocation.URI = sarifURI(e.File)
	if e.Line > 0 {
		l.PhysicalLocation.Region = &sarifRegion{StartLine: e.Line}
	}
	return l
}

func sarifLog(rep detectors.Report, version string) sarifDoc {
	driver := sarifDriver{Name: "retrace", InformationURI: "https://github.com/retrace-dev/retrace", Version: version, Rules: []sarifRule{}}
	index := map[string]int{}
	for i, in := range rep.Detectors {
		r := sarifRule{ID: in.ID, ShortDescription: sarifMessage{in.Title}, FullDescription: sarifMessage{in.About},
			Help: sarifMessage{in.NextStep}, Properties: map[string]any{"corpus": in.Corpus, "docs": "docs/failure-modes.md"}}
		r.DefaultConfiguration.Level = sarifLevel(in.Severity)
		driver.Rules = append(driver.Rules, r)
		index[in.ID] = i
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	for _, f := range rep.Findings {
		res := sarifResult{RuleID: f.Detector, RuleIndex: index[f.Detector], Level: sarifLevel(f.Severity),
			Message:    sarifMessage{f.Message + ". Next: " + f.NextStep},
			Locations:  []sarifLocation{},
			Properties: map[string]any{"session": f.Session, "turn": f.Turn}}
		if f.ToolUseID != "" {
			res.Properties["tool_use_id"] = f.ToolUseID
		}
		if len(f.Sessions) > 0 {
			res.Properties["sessions"] = f.Sessions
		}
		var seqs []int64
		for i, e := range f.Evidence {
			seqs = append(seqs, e.Seq)
			l := sarifLocationOf(e)
			if i == 0 {
				res.Locations = append(res.Locations, l)
				continue
			}
			id := i
			l.ID, l.Message = &id, &sarifMessage{fmt.Sprintf("%s, seq %d", e.Type, e.Seq)}
			res.RelatedLocations = append(res.RelatedLocations, l)
		}
		res.Properties["seqs"] = seqs
		run.Results = append(run.Results, res)
	}
	return sarifDoc{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
}

// plural says n nouns: "1 finding", "2 findings".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// relPath is p relative to dir when p is under dir, else p as it is.
func relPath(dir, p string) string {
	if dir == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// wrap breaks text at spaces into lines of at most width columns, the
// first starting with first and each after it with indent. A word longer
// than a line (a path, most often) gets a line of its own and stays
// whole: cut, it would no longer name the file a reader must open. Every
// line ends with a newline.
func wrap(first, text string, width int, indent string) string {
	var b strings.Builder
	line, empty := first, true
	for _, word := range strings.Fields(text) {
		switch {
		case empty:
			line += word
		case twwidth.Width(line)+1+twwidth.Width(word) <= width:
			line += " " + word
		default:
			b.WriteString(line + "\n")
			line = indent + word
		}
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
