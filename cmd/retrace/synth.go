package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/synth"
)

type synthOptions struct {
	sessions int
	turns    int
	out      string
	seed     int64
	start    string
	days     int
	force    bool
	faults   string
	shifts   []string
	format   *formatFlag
}

func newSynthCmd(sys *IO) *cobra.Command {
	opts := &synthOptions{}
	cmd := &cobra.Command{
		Use:   "synth --out DIR [--sessions N] [--seed S]",
		Short: "Write a realistic synthetic corpus of trajectories, for benchmarks and demos",
		Long: `Synth writes N sessions of a made-up coding agent, one <session-id>.jsonl file
each, that look like recorded ones to every retrace command and pass
'retrace validate'. Sessions last 1 to about 30 turns, with token usage
that grows turn by turn and a mostly warm prompt cache; they call the
built-in tools in parallel and serial batches, each call with its own
latency (reads about 1 ms, grep tens of ms, bash up to seconds with a long
tail); permissions are decided along the whole chain (read-only, rules,
modes, session memory, prompts answered by a person or refused headless);
some calls fail, with the usual mix of failure kinds (tool_error most, then
permission_denied, not_found, invalid_input, and rare timeout, hook_blocked,
aborted, exception); defenses act now and then; most sessions end with
end_turn, some on max_turns, a budget, a user abort or a model error.
Session starts spread over --days days from --start, so exports
partitioned by date get several partitions.

The corpus is a function of --sessions, --seed, --start and --days: the
same flags write the same bytes, so benchmark inputs can be regenerated
instead of stored. Message and tool output texts are short and canned
(sizes are carried by output_bytes and token counts) and blob references
point to no stored blob: the corpus can be validated, queried and
exported, not replayed.

DIR is created if missing. If it already holds *.jsonl files, synth
refuses, so a corpus never mixes silently with real runs or another
corpus; --force writes anyway, replacing files of the same name (the same
flags give the same names) and keeping the others.

--faults plants failure modes for 'retrace detect' to find: "all", or a
comma list of these detector ids:

` + wrapList(synth.Faults, 76, "  ") + `

Every second session carries one, going round the list,
and DIR/faults.ndjson gets the ground truth, one JSON object a line:
detector, session, file (relative to DIR), line and seq of the event the
detector's finding names first, and the tool_use_id. Every other finding
at warning or error is a detector's false positive. A fault that finds no
place (too few sessions) is an error (exit 2).

--shift plants one change of the generator, for before/after tests of
'retrace diff': write two corpora with the same --seed, one with shifts
and one without, and they differ in the shifted quantities and nothing
else. Repeat it for several. A shift is TOOL.QUANTITY:

  TOOL.failure+POINTS  the tool's calls that run fail POINTS more often
                       (0.05 = +5 points); a call that would have
                       succeeded fails like that tool's own failures, and
                       the session goes on as it would have
  TOOL.p95*FACTOR      the tool's latency tail is stretched so that its
                       p95 is FACTOR times what it was (FACTOR above 1);
                       its median stays

TOOL is one of:

` + wrapList(synth.ShiftTools(), 76, "  ") + `

A one-line summary goes to stderr; --format json also prints it as an
object on stdout.

Exit codes: 0 written, 2 bad flags or a DIR that already holds runs,
1 a file could not be written.`,
		Example: `  retrace synth --sessions 2000 --out D && retrace metrics D --metric all
  retrace synth --out /tmp/corpus --seed 42 --days 30 --format json
  retrace synth --sessions 200 --faults all --out D && retrace detect D --format json
  retrace synth --sessions 2000 --seed 7 --out before
  retrace synth --sessions 2000 --seed 7 --out after --shift bash.failure+0.05 --shift 'read.p95*1.5'
  retrace diff before after
  retrace query "select tool, count(*) from tool_calls group by tool" /tmp/corpus`,
		Args: noArgs,
	}
	cmd.Flags().IntVar(&opts.sessions, "sessions", 200, "number of sessions (files) to write")
	cmd.Flags().IntVar(&opts.turns, "turns", 0, "plan every session to last `N` turns instead of drawing its length (0: drawn)")
	cmd.Flags().StringVar(&opts.out, "out", "", "directory to write the corpus to (required; created if missing)")
	cmd.Flags().Int64Var(&opts.seed, "seed", 1, "selects the corpus; the same seed and flags give the same files")
	cmd.Flags().StringVar(&opts.start, "start", synth.DefaultStart.Format(time.DateOnly), "earliest session start, as YYYY-MM-DD or RFC 3339 (UTC)")
	cmd.Flags().IntVar(&opts.days, "days", synth.DefaultDays, "number of days the session starts spread over")
	cmd.Flags().BoolVar(&opts.force, "force", false, "write into a DIR that already holds *.jsonl files")
	cmd.Flags().StringVar(&opts.faults, "faults", "", `plant faults for retrace detect: "all" or a comma list of detector ids; the ground truth goes to DIR/`+synth.FaultsFile)
	cmd.Flags().StringArrayVar(&opts.shifts, "shift", nil, `plant a change of the generator: TOOL.failure+POINTS or TOOL.p95*FACTOR (repeatable)`)
	opts.format = addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runSynth(ctx, sys, opts)
	}
	return cmd
}

// synthJSON is the --format json summary.
type synthJSON struct {
	Dir          string  `json:"dir"`
	Sessions     int     `json:"sessions"`
	Events       int64   `json:"events"`
	ToolCalls    int64   `json:"tool_calls"`
	ToolFailures int64   `json:"tool_failures"`
	Bytes        int64   `json:"bytes"`
	Seed         int64   `json:"seed"`
	FirstStart   string  `json:"first_start"`
	LastStart    string  `json:"last_start"`
	Seconds      float64 `json:"seconds"`
	// Faults counts the planted faults; FaultsFile is where they are
	// listed. Both are absent without --faults.
	Faults     int    `json:"faults,omitempty"`
	FaultsFile string `json:"faults_file,omitempty"`
	// Shifts are the planted changes in --shift's form, and
	// PlantedFailures the calls a failure shift turned into failures (in
	// tool_failures too); both absent without --shift.
	Shifts          []string `json:"shifts,omitempty"`
	PlantedFailures int64    `json:"planted_failures,omitempty"`
}

func runSynth(ctx context.Context, sys *IO, opts *synthOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	switch {
	case opts.out == "":
		return usage(errors.New("--out is required: name the directory to write the corpus to, e.g. --out /tmp/corpus"))
	case opts.turns < 0:
		return usage(fmt.Errorf("--turns %d: give 0 (drawn) or more", opts.turns))
	case opts.sessions < 1:
		return usage(fmt.Errorf("--sessions %d: give at least 1 session", opts.sessions))
	case opts.days < 1:
		return usage(fmt.Errorf("--days %d: give at least 1 day to spread the sessions over", opts.days))
	}
	start, err := parseStart(opts.start)
	if err != nil {
		return usage(err)
	}
	faults, err := parseFaults(opts.faults)
	if err != nil {
		return usage(err)
	}
	var shifts []synth.Shift
	for _, s := range opts.shifts {
		sh, err := synth.ParseShift(s)
		if err != nil {
			return usage(fmt.Errorf("--shift: %w", err))
		}
		shifts = append(shifts, sh)
	}
	if info, err := os.Stat(opts.out); err == nil && !info.IsDir() {
		return usage(fmt.Errorf("--out %s is a file; give a directory (it is created if missing)", opts.out))
	}
	began := sys.Now()
	rep, err := synth.Write(ctx, opts.out, synth.Options{Sessions: opts.sessions, Seed: opts.seed, Start: start, Days: opts.days, Overwrite: opts.force, Faults: faults, Shifts: shifts, Turns: opts.turns})
	switch {
	case errors.Is(err, synth.ErrDirHasRuns):
		return invalid(fmt.Errorf("%w; write to an empty or new directory, or pass --force to add to it", err))
	case errors.Is(err, synth.ErrInvalidOptions):
		return usage(err)
	case errors.Is(err, synth.ErrFaultNotPlanted):
		return invalid(fmt.Errorf("%w (--sessions %d --faults %s)", err, opts.sessions, opts.faults))
	case err != nil:
		return err
	}
	elapsed := sys.Now().Sub(began)
	fmt.Fprintf(sys.Err, "wrote %s, %d events (%.1f MB) to %s in %.1fs; sessions start from %s to %s\n",
		plural(rep.Sessions, "session"), rep.Events, float64(rep.Bytes)/1e6, rep.Dir, elapsed.Seconds(),
		rep.First.Format(time.DateOnly), rep.Last.Format(time.DateOnly))
	doc := synthJSON{Dir: rep.Dir, Sessions: rep.Sessions, Events: rep.Events, ToolCalls: rep.ToolCalls,
		ToolFailures: rep.ToolFailures, Bytes: rep.Bytes, Seed: opts.seed, FirstStart: rep.First.Format(time.RFC3339),
		LastStart: rep.Last.Format(time.RFC3339), Seconds: elapsed.Seconds()}
	if len(faults) > 0 {
		doc.Faults, doc.FaultsFile = len(rep.Faults), filepath.Join(rep.Dir, synth.FaultsFile)
		fmt.Fprintf(sys.Err, "planted %s; the ground truth is in %s\n", plural(doc.Faults, "fault"), doc.FaultsFile)
	}
	if len(shifts) > 0 {
		for _, s := range shifts {
			doc.Shifts = append(doc.Shifts, s.String())
		}
		doc.PlantedFailures = rep.PlantedFailures
		fmt.Fprintf(sys.Err, "shifted %s", strings.Join(doc.Shifts, ", "))
		if rep.PlantedFailures > 0 {
			fmt.Fprintf(sys.Err, "; planted %s", plural(int(rep.PlantedFailures), "failure"))
		}
		fmt.Fprintln(sys.Err)
	}
	if opts.format.value != "json" {
		return nil
	}
	enc := json.NewEncoder(sys.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// parseFaults reads --faults: "" for none, "all", or a comma list of the
// detector ids synth plants.
func parseFaults(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if s == "all" {
		return slices.Clone(synth.Faults), nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(synth.Faults, f) {
			return nil, fmt.Errorf("--faults: %q is not a fault synth plants; give all or a comma list of %s", f, strings.Join(synth.Faults, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// parseStart reads --start as a date or an RFC 3339 time, in UTC.
func parseStart(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--start %q is neither a date (2026-11-23) nor an RFC 3339 time (2026-11-23T08:00:00Z)", s)
	}
	return t.UTC(), nil
}

// wrapList joins items with commas into lines of at most width
// characters, each starting with indent, for a help text.
func wrapList(items []string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if len(line) > len(indent) && len(line)+1+len(it) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += it
	}
	b.WriteString(line)
	return b.String()
}
