package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/terminal"
)

// detectFormats are the output formats of retrace detect.
var detectFormats = []string{"table", "markdown", "json", "sarif", "github"}

type detectOptions struct {
	paths      []string
	only, skip []string
	failOn     string
	list       bool
	defenses   bool
	loadFlags
	limit  int
	config string
	format *formatFlag
}

func newDetectCmd(sys *IO) *cobra.Command {
	opts := &detectOptions{}
	cmd := &cobra.Command{
		Use:   "detect [RUNS...]",
		Short: "Find the green-but-broken failure modes in trajectories, with the lines that prove them",
		Long: `Detect runs the detector catalog over trajectories: each detector looks for
one failure mode (a lost tool call, a tool_use without a tool_result, a
stop reason taken for done, a denial loop, ...; docs/failure-modes.md in
retrace's repository explains each), computed
from the recorded events alone, and every finding points at the file, line
and seq of the events that prove it, with the numbers seen, the threshold,
and what to change. --list documents every detector.

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no RUNS, --runs DIR, else the
runs directory is read (RETRACE_DIR or .retrace/runs). ` + readingInputs + `

` + readingDupes + `

` + readingStore + `

Formats: table (counts per detector, then the worst findings), markdown,
json (one document: detectors, findings, counts), sarif (SARIF 2.1.0, each
result at the trajectory file and line, for GitHub code scanning and
editors), github (workflow annotations: ::error file=…,line=…::message).
With --format json a failure is {"error": {"code", "message", "problems"}}.

Exit codes: 0 no finding at or above --fail-on, 3 at least one (the gate
failed; the findings are printed all the same), 2 bad usage or bad input
(a bad line, a repeated seq, a file that cannot be read or holds no
event, a missing path), 1 retrace itself failed.

Thresholds: each detector's thresholds and their defaults are in --list;
the detectors: section of retrace.yaml (--config, default ./retrace.yaml
when there is one) sets them per detector, and a name no detector has is
refused (exit 2, file:line):

  detectors:
    denial_loop:
      min_denials: 5

Progress: on a terminal, a bar on stderr follows the load; the detectors
over the event stream run as it checks the files, on the events it
decodes, so each file is read once (stdin and named pipes included). The
trajectories of a Parquet export are read again after the load, with a
bar of their own.

--defenses prints the defense liveness table instead of findings: for
every defense a session_start enabled, the sessions that enabled it, its
defense_triggers, how often its check ran and its condition held
(recomputed from the events), and a verdict: live (it acted),
never_needed (its condition never occurred), dead (its condition occurred
and it never acted; exit 3 with --fail-on warning or info, as the
dead_defense detector, a warning), or not_observable (the trajectory does not carry its
condition). Formats: table, markdown, json.`,
		Example: `  retrace detect
  retrace detect runs/ --fail-on warning --format github
  retrace detect runs/ --only lost_call,unpaired_tool_use --format sarif > detect.sarif
  retrace detect --list
  retrace detect runs/ --defenses`,
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.only, "only", nil, "run only these detectors (ids, comma-separated)")
	f.StringSliceVar(&opts.skip, "skip", nil, "leave these detectors out (ids, comma-separated)")
	f.StringVar(&opts.failOn, "fail-on", "error", "exit 3 when a finding of this severity or worse exists: error, warning, info or never")
	f.BoolVar(&opts.list, "list", false, "document every detector (id, severity, what it means, thresholds, next step) and exit")
	f.BoolVar(&opts.defenses, "defenses", false, "print the defense liveness table (live, never_needed, dead, not_observable) instead of findings")
	addLoadFlags(cmd, &opts.loadFlags)
	f.StringVar(&opts.config, "config", "", "retrace.yaml whose detectors: section sets thresholds; default ./retrace.yaml when present")
	f.IntVar(&opts.limit, "limit", 20, "findings shown in table and markdown output; 0 shows all (json, sarif and github always have all)")
	opts.format = addFormatFlag(cmd, detectFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		paths, err := opts.inputs(args)
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		opts.paths = paths
		return withJSONErrors(sys, opts.format, runDetect(cmd.Context(), sys, opts))
	}
	return cmd
}

// failThreshold returns the lowest severity rank that fails the gate, or
// 0 for never.
func failThreshold(s string) (int, error) {
	if s == "never" {
		return 0, nil
	}
	sev, err := detectors.ParseSeverity(s)
	if err != nil {
		return 0, usage(fmt.Errorf("--fail-on %q: use error, warning, info or never", s))
	}
	return sev.Rank(), nil
}

func runDetect(ctx context.Context, sys *IO, opts *detectOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	threshold, err := failThreshold(opts.failOn)
	if err != nil {
		return err
	}
	if opts.limit < 0 {
		return usage(fmt.Errorf("--limit %d: give a number of findings, or 0 for all", opts.limit))
	}
	ds, err := detectors.Select(opts.only, opts.skip)
	if err != nil {
		return usage(err)
	}
	settings, err := detectSettings(opts.config)
	if err != nil {
		return err
	}
	if opts.list {
		return writeDetectorList(sys.Out, opts.format.value, ds, settings)
	}
	if opts.defenses && opts.format.value != "table" && opts.format.value != "markdown" && opts.format.value != "json" {
		return usage(fmt.Errorf("--defenses --format %s: the liveness table prints as table, markdown or json", opts.format.value))
	}
	// The detectors run in the load's pass, on the events its check
	// decodes, so every file is read once; the load's bar follows both.
	// The count bar follows the files read again after the load: the
	// trajectories of a Parquet export. They read a file in milliseconds:
	// only many files need a bar.
	bar := newCountBar(sys.Err, "detectors, files read", 200)
	var rep detectors.Report
	var lv detectors.Liveness
	db, err := openAndLoadWith(ctx, sys, "", opts.loadFlags, opts.paths, func(db *metrics.DB, paths []string) (lrep metrics.LoadReport, err error) {
		if opts.defenses {
			lv, lrep, err = detectors.LoadLiveness(ctx, db, paths)
		} else {
			rep, lrep, err = detectors.Detect(ctx, db, paths, ds, detectors.Options{Settings: settings, Progress: bar.update})
		}
		bar.finish()
		return lrep, err
	})
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.defenses {
		return runDefenses(sys, lv, opts.format.value, threshold)
	}
	for _, f := range rep.Unread {
		fmt.Fprintf(sys.Err, "%s: warning: read by the SQL detectors only (its events came from Parquet, and the file is no longer there); the detectors over the event stream did not see it\n", f)
	}
	if err := writeDetectReport(sys.Out, opts.format.value, rep, opts.limit); err != nil {
		return err
	}
	failing := 0
	for _, f := range rep.Findings {
		if threshold > 0 && f.Severity.Rank() >= threshold {
			failing++
		}
	}
	if failing == 0 {
		return nil
	}
	fmt.Fprintf(sys.Err, "retrace: detect: %s at or above %s (--fail-on %s)\n", plural(failing, "finding"), opts.failOn, opts.failOn)
	return &exitError{code: ExitGate, err: errReported}
}

// detectSettings reads the thresholds of the detectors: section of the
// configuration file path, or of ./retrace.yaml when path is empty and
// that file exists, and checks them against the whole catalog (so a
// threshold of a detector --skip leaves out is still checked).
func detectSettings(path string) (detectors.Settings, error) {
	if path == "" {
		if _, err := os.Stat(config.FileName); err != nil {
			return nil, nil
		}
		path = config.FileName
	}
	f, err := config.LoadFile(path)
	if err != nil {
		return nil, invalid(err)
	}
	s := detectors.Settings(f.Config.Detectors)
	if err := s.Check(detectors.Catalog(), func(id, name string) string {
		if name == "" {
			return f.At("detectors", id)
		}
		return f.At("detectors", id, name)
	}); err != nil {
		return nil, invalid(err)
	}
	return s, nil
}

// runDefenses prints the liveness table lv and fails the gate, as the
// dead_defense detector (a warning) would, when a defense is dead and
// --fail-on is warning or info.
func runDefenses(sys *IO, lv detectors.Liveness, format string, threshold int) error {
	if err := writeLiveness(sys.Out, format, lv); err != nil {
		return err
	}
	dead := 0
	for _, r := range lv.Defenses {
		if r.Verdict == detectors.VerdictDead {
			dead++
		}
	}
	if dead == 0 || threshold == 0 || threshold > detectors.SeverityWarning.Rank() {
		return nil
	}
	fmt.Fprintf(sys.Err, "retrace: detect: %s dead: enabled, their condition occurred, and they never acted (dead_defense in docs/failure-modes.md)\n", plural(dead, "defense"))
	return &exitError{code: ExitGate, err: errReported}
}

// writeLiveness prints the liveness table, then for each dead defense the
// sessions and lines where its condition held.
func writeLiveness(w io.Writer, format string, lv detectors.Liveness) error {
	if format == "json" {
		if lv.Defenses == nil {
			lv.Defenses = []detectors.DefenseLiveness{}
		}
		return writeJSON(w, lv)
	}
	t := metrics.Table{Columns: []string{"defense", "verdict", "sessions", "triggers", "checked", "condition held", "held in sessions", "missed sessions", "condition"}}
	for _, r := range lv.Defenses {
		checked, held := any(int64(r.Checked)), any(int64(r.Held))
		if !r.Observable {
			checked, held = "-", "-"
		}
		t.Rows = append(t.Rows, []any{string(r.Defense), string(r.Verdict), int64(r.Sessions), int64(r.Triggers),
			checked, held, int64(len(r.HeldSessions)), int64(len(r.Missed)), r.Condition})
	}
	if format == "markdown" {
		fmt.Fprintf(w, "## defense liveness: %s\n\n", plural(lv.Sessions, "session"))
	} else {
		fmt.Fprintf(w, "== defense liveness: %s ==\n", plural(lv.Sessions, "session"))
	}
	if err := writeTable(w, format, t); err != nil {
		return err
	}
	for _, r := range lv.Defenses {
		if r.Verdict != detectors.VerdictDead {
			continue
		}
		f := detectors.Finding{Evidence: r.Evidence}
		fmt.Fprintf(w, "\n%s is dead: its condition held in %s without a trigger, first at %s\n", r.Defense, plural(len(r.Missed), "session"), where(f))
	}
	return nil
}

// writeDetectorList documents ds; each threshold is shown with the value
// in force, which settings may have changed from the default.
func writeDetectorList(w io.Writer, format string, ds []detectors.Detector, settings detectors.Settings) error {
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
		return writeJSON(w, infos)
	case "sarif":
		return writeJSON(w, sarifLog(detectors.Report{Detectors: infos, Findings: []detectors.Finding{}}))
	case "markdown":
		t := metrics.Table{Columns: []string{"id", "severity", "title", "what it means", "thresholds", "next step"}}
		for _, in := range infos {
			var ts []string
			for _, th := range in.Thresholds {
				ts = append(ts, thresholdText(th))
			}
			t.Rows = append(t.Rows, []any{in.ID, string(in.Severity), in.Title, in.About, strings.Join(ts, "; "), in.NextStep})
		}
		return writeTable(w, "markdown", t)
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

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// detectJSON is what detect prints with --format json.
type detectJSON struct {
	detectors.Report
	// Counts has the number of findings of every detector that ran.
	Counts map[string]int `json:"counts"`
}

func writeDetectReport(w io.Writer, format string, rep detectors.Report, limit int) error {
	switch format {
	case "json":
		counts := map[string]int{}
		for _, in := range rep.Detectors {
			counts[in.ID] = 0
		}
		for id, n := range rep.Counts() {
			counts[id] = n
		}
		return writeJSON(w, detectJSON{Report: rep, Counts: counts})
	case "sarif":
		return writeJSON(w, sarifLog(rep))
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
	sum := metrics.Table{Columns: []string{"detector", "errors", "warnings", "info", "sessions"}}
	for _, in := range rep.Detectors {
		n := bySeverity[in.ID]
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
	if err := writeTable(w, format, sum); err != nil {
		return err
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
	t := metrics.Table{Columns: []string{"severity", "detector", "where", "session", "turn", "message"}}
	for _, f := range shown {
		t.Rows = append(t.Rows, []any{string(f.Severity), f.Detector, where(f), f.Session, int64(f.Turn), f.Message})
	}
	if err := writeTable(w, format, t); err != nil {
		return err
	}
	if cut := len(rep.Findings) - len(shown); cut > 0 {
		fmt.Fprintf(w, "(%s not shown; --limit 0 shows all, json, sarif and github always do)\n", plural(cut, "finding"))
	}
	fmt.Fprintln(w)
	heading("next steps")
	for _, in := range rep.Detectors {
		if counts[in.ID] > 0 {
			fmt.Fprintf(w, "- %s: %s\n", in.ID, in.NextStep)
		}
	}
	return nil
}

// where renders a finding's first evidence as file:line, with the other
// evidence lines after it.
func where(f detectors.Finding) string {
	if len(f.Evidence) == 0 {
		return ""
	}
	s := fmt.Sprintf("%s:%d", f.Evidence[0].File, f.Evidence[0].Line)
	var more []string
	for _, e := range f.Evidence[1:] {
		if e.File == f.Evidence[0].File {
			more = append(more, fmt.Sprint(e.Line))
		} else {
			more = append(more, fmt.Sprintf("%s:%d", e.File, e.Line))
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

func sarifLog(rep detectors.Report) sarifDoc {
	driver := sarifDriver{Name: "retrace", InformationURI: "https://github.com/retrace-dev/retrace", Version: currentVersion().Version, Rules: []sarifRule{}}
	index := map[string]int{}
	for i, in := range rep.Detectors {
		r := sarifRule{ID: in.ID, ShortDescription: sarifMessage{in.Title}, FullDescription: sarifMessage{in.About},
			Help: sarifMessage{in.NextStep}, Properties: map[string]any{"seed": in.Seed, "corpus": in.Corpus}}
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
