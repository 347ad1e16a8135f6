// Package report is the one place where retrace turns what it computed
// into bytes for a reader: terminal tables and Markdown (WriteTable, for
// every command's tables), what the detectors found as a table, JSON,
// SARIF 2.1.0 or GitHub workflow annotations (WriteDetect), eval results
// as a summary, Markdown or a JUnit XML file (WriteEvalTable, WriteJUnit),
// a diff as a table, Markdown or JSON (WriteDiffTable), and the HTML
// report. The packages that compute (metrics, detectors, results, diff)
// never print; cmd/retrace parses flags, calls them and hands the result
// here.
//
// Terminal output is made for a CI log as much as for a terminal: text
// from trajectories goes through package terminal, so no escape sequence
// a model wrote reaches the reader.
//
// # The HTML report
//
// The HTML report is one self-contained file (inline CSS and inline SVG,
// no script, no font and no URL from anywhere) that a person opens from
// disk to see what a corpus of trajectories did.
//
// The work is split in two so that each half is tested on its own. Gather
// reads a loaded *metrics.DB (and the detectors' findings and liveness
// table) into a Model: plain numbers, each rate with its denominator, the
// measured durations per tool, and, for the sessions most worth reading
// (those with findings, then failures, then the longest), a timeline and
// the conversation. Render writes a Model as HTML with html/template, so
// every string from a trajectory, which is untrusted input, is escaped;
// the charts are SVG, drawn with gonum.org/v1/plot (latency histograms)
// or directly (bars and the timeline lanes, where a plotting library
// brings nothing), and inlined as markup rather than data: URIs so the
// file stays small and its text searchable.
//
// The numbers are the named metrics' (package metrics): the funnel, the
// latency percentiles, the failure kinds and the permission decisions are
// the same queries retrace metrics runs, so the report and the command
// never disagree.
package report
