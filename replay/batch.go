package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/recorder"
)

// Verdict is how one recording of a batch came out.
type Verdict string

// The verdicts.
const (
	// VerdictIdentical: the replay matches the recording after normalisation.
	VerdictIdentical Verdict = "identical"
	// VerdictDiverged: the replay ran and differs from the recording.
	VerdictDiverged Verdict = "diverged"
	// VerdictFailed: the recording could not be replayed; Session.Err says why.
	VerdictFailed Verdict = "failed"
	// VerdictExpected: the replay differs, and it left out settings of the
	// recording (Result.LeftOut: hooks and MCP servers it did not run,
	// or the mode and rules of a recording not proven the user's own),
	// which explain such divergences; --trust-recording applies them.
	VerdictExpected Verdict = "expected"
	// VerdictExhibit: the recording is a failure museum exhibit, written
	// by hand rather than by the runtime (recorder.NotReplayable): not
	// replayable, and no failure.
	VerdictExhibit Verdict = "exhibit"
	// VerdictInterrupted: the batch was interrupted (SIGINT, SIGTERM)
	// before this replay finished, or before it started.
	VerdictInterrupted Verdict = "interrupted"
)

// BatchOptions say which recordings to replay and how.
type BatchOptions struct {
	// Recordings are the trajectory files, in the order the summary lists
	// them.
	Recordings []string
	// Jobs is how many replays run at once; 0 means one per CPU.
	Jobs int
	// Run is the template every replay starts from: Out, Config, Keep,
	// TrustRecording and Compare apply to each recording; Recording is
	// set per recording. Workspace may only be given for a batch of one,
	// since two recordings cannot be restored into the same directory.
	Run RunOptions
	// Progress, when set, is called after each replay ends with the number
	// done so far; calls never overlap.
	Progress func(done, total int, s Session)
}

// Session is one recording's outcome in a batch.
type Session struct {
	// Recording is the trajectory file as it was given.
	Recording string
	Verdict   Verdict
	// Result is the replay's result; its Report is empty when the
	// verdict is failed.
	Result Result
	// Err is why the replay failed or was interrupted, nil otherwise.
	Err error
	// Why says why an exhibit is not replayable.
	Why string
}

// BadInput reports whether the session failed because of its input (a
// file that is not a trajectory, a recording that cannot be replayed, a
// bad --config), as opposed to a failure of retrace itself.
func (s Session) BadInput() bool {
	return s.Err != nil && s.Verdict == VerdictFailed && isInputError(s.Err)
}

func isInputError(err error) bool {
	return errors.Is(err, ErrInput) || errors.Is(err, ErrNotReplayable) || errors.Is(err, fs.ErrNotExist)
}

// Batch is the outcome of RunBatch.
type Batch struct {
	// Sessions are in the order of BatchOptions.Recordings.
	Sessions []Session
	// Identical, Diverged and Failed count the sessions per verdict, and
	// so do Expected, Exhibits and Interrupted.
	Identical, Diverged, Failed     int
	Expected, Exhibits, Interrupted int
	// Classes counts the divergences of every diverged session per class.
	Classes map[Class]int
}

// BadInput reports whether any session failed because of its input.
func (b Batch) BadInput() bool {
	for _, s := range b.Sessions {
		if s.BadInput() {
			return true
		}
	}
	return false
}

// HarnessFailed reports whether any session failed for another reason
// than its input: retrace itself could not replay it.
func (b Batch) HarnessFailed() bool {
	for _, s := range b.Sessions {
		if s.Verdict == VerdictFailed && !s.BadInput() {
			return true
		}
	}
	return false
}

// RunBatch replays every recording (Jobs at a time), each in its own
// temporary workspace, and collects one verdict per recording. One
// recording that cannot be replayed does not stop the others: it is a
// failed session with its reason, so that the summary shows everything
// that is wrong at once. RunBatch itself fails only for options that make
// every replay impossible: a --workspace for more than one recording, a
// --config that cannot be loaded.
// When ctx is cancelled, the replays under way and the recordings not yet
// started are interrupted, never diverged or failed: what finished keeps
// its verdict.
func RunBatch(ctx context.Context, opts BatchOptions) (Batch, error) {
	if len(opts.Recordings) > 1 && opts.Run.Workspace != "" {
		return Batch{}, fmt.Errorf("%w: --workspace %s names one directory for %d recordings; leave --workspace out so that each recording is restored into its own temporary workspace, or replay one recording at a time", ErrInput, opts.Run.Workspace, len(opts.Recordings))
	}
	if opts.Run.Config != "" {
		// One bad what-if file would fail every replay the same way: say it
		// once.
		if err := checkConfig(opts.Run.Config); err != nil {
			return Batch{}, fmt.Errorf("%w: --config: %w; fix the file or leave --config out to replay under the recordings' own configuration", ErrInput, err)
		}
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	jobs = min(jobs, max(len(opts.Recordings), 1))
	sessions := make([]Session, len(opts.Recordings))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range jobs {
		wg.Go(func() {
			for i := range next {
				s := replayOne(ctx, opts.Run, opts.Recordings[i])
				sessions[i] = s
				if opts.Progress != nil {
					mu.Lock()
					done++
					opts.Progress(done, len(sessions), s)
					mu.Unlock()
				}
			}
		})
	}
feed:
	for i := range opts.Recordings {
		select {
		case next <- i:
		case <-ctx.Done():
			for j := i; j < len(opts.Recordings); j++ {
				sessions[j] = Session{Recording: opts.Recordings[j], Verdict: VerdictInterrupted, Err: fmt.Errorf("not replayed: %w", context.Cause(ctx))}
			}
			break feed
		}
	}
	close(next)
	wg.Wait()
	b := Batch{Sessions: sessions, Classes: map[Class]int{}}
	for _, s := range sessions {
		switch s.Verdict {
		case VerdictIdentical:
			b.Identical++
		case VerdictDiverged:
			b.Diverged++
			for c, n := range s.Result.Report.Counts {
				b.Classes[c] += n
			}
		case VerdictExpected:
			b.Expected++
		case VerdictExhibit:
			b.Exhibits++
		case VerdictInterrupted:
			b.Interrupted++
		default:
			b.Failed++
		}
	}
	return b, nil
}

// checkConfig loads and checks a what-if file as Run will. Its rules are
// checked against the temporary directory, which stands for any workspace:
// a rule that is wrong is wrong in every one.
func checkConfig(path string) error {
	f, err := config.LoadFile(path)
	if err != nil {
		return err
	}
	_, _, err = f.Config.Check(path, os.TempDir())
	return err
}

// replayOne replays one recording and gives it its verdict. The recording
// is read once; an exhibit is not read at all.
func replayOne(ctx context.Context, template RunOptions, path string) Session {
	opts := template
	opts.Recording = path
	if why, ok := recorder.NotReplayable(path); ok {
		return Session{Recording: path, Verdict: VerdictExhibit, Why: why}
	}
	rec, err := load(ctx, path)
	if err == nil {
		var res Result
		res, err = rec.replay(ctx, opts)
		switch {
		case ctx.Err() != nil:
			// Stopped part way: what differs is the interruption's doing.
		case err != nil:
		case res.Report.Identical():
			return Session{Recording: path, Verdict: VerdictIdentical, Result: res}
		case len(res.LeftOut) > 0:
			return Session{Recording: path, Verdict: VerdictExpected, Result: res}
		default:
			return Session{Recording: path, Verdict: VerdictDiverged, Result: res}
		}
	}
	if ctx.Err() != nil {
		return Session{Recording: path, Verdict: VerdictInterrupted, Err: fmt.Errorf("interrupted: %w", context.Cause(ctx))}
	}
	return Session{Recording: path, Verdict: VerdictFailed, Err: err}
}

// Reason is a session's failure in one line, "" for a session that ran.
// The sentinel's "bad replay input: " prefix is left out: the summary's
// rows are read side by side, and it says nothing the row does not.
func (s Session) Reason() string {
	if s.Why != "" {
		return "not replayable: " + compare.OneLine(s.Why)
	}
	if s.Verdict == VerdictExpected {
		return "left out " + strings.Join(s.Result.LeftOut, ", ")
	}
	if s.Err == nil {
		return ""
	}
	return compare.OneLine(strings.TrimPrefix(s.Err.Error(), ErrInput.Error()+": "))
}

// firstLine describes the session's first divergence, e.g.
// "turn 2, toolu_3: tool_output_changed (text)".
func (s Session) firstLine() string {
	d, ok := s.Result.Report.First()
	if !ok {
		return ""
	}
	where := fmt.Sprintf("turn %d", d.Turn)
	if d.ToolUseID != "" {
		where += ", " + d.ToolUseID
	}
	if d.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", where, d.Class, d.Field)
	}
	return fmt.Sprintf("%s: %s", where, d.Class)
}

// Totals is the batch's one-line verdict, e.g.
// "20 recordings: 18 identical, 2 diverged, 0 failed".
func (b Batch) Totals() string {
	s := fmt.Sprintf("%s: %d identical, %d diverged, %d failed", plural(len(b.Sessions), "recording"), b.Identical, b.Diverged, b.Failed)
	if b.Expected > 0 {
		s += fmt.Sprintf(", %d expected (settings left out)", b.Expected)
	}
	if b.Exhibits > 0 {
		s += fmt.Sprintf(", %s (not replayable)", plural(b.Exhibits, "exhibit"))
	}
	if b.Interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", b.Interrupted)
	}
	return s
}

// classLine lists the divergence classes with their counts in report order.
func (b Batch) classLine(sep string) string {
	var parts []string
	for _, c := range Classes {
		if n := b.Classes[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, sep)
}

// Table writes the batch summary for a terminal: one aligned row per
// session (its verdict, its number of divergences, the first divergence or
// the reason it failed), then the totals and the divergence classes.
func (b Batch) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECORDING\tRESULT\tDIVERGENCES\tFIRST DIVERGENCE / REASON")
	for _, s := range b.Sessions {
		what := s.firstLine()
		n := "-"
		switch s.Verdict {
		case VerdictFailed, VerdictExhibit, VerdictInterrupted:
			what = s.Reason()
		case VerdictExpected:
			n = fmt.Sprint(len(s.Result.Report.Divergences))
			what = s.firstLine() + "; " + s.Reason()
		case VerdictDiverged:
			n = fmt.Sprint(len(s.Result.Report.Divergences))
		case VerdictIdentical:
			n = "0"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", compare.OneLine(s.Recording), s.Verdict, n, compare.OrDash(what))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%s\n", b.Totals()); err != nil {
		return err
	}
	if line := b.classLine(", "); line != "" {
		if _, err := fmt.Fprintf(w, "divergence classes: %s\n", line); err != nil {
			return err
		}
	}
	return nil
}

// Markdown writes the batch summary as Markdown fit for a pull-request
// comment: a heading with the verdict, the counts per class, and a table
// of the sessions that did not replay identically (all of them identical
// is one sentence, not a table of twenty rows).
func (b Batch) Markdown(w io.Writer) error {
	var sb strings.Builder
	switch {
	case b.Diverged == 0 && b.Failed == 0:
		fmt.Fprintf(&sb, "### Replay: all %s identical\n\n", plural(len(b.Sessions), "recording"))
	default:
		fmt.Fprintf(&sb, "### Replay: %d of %s diverged, %d failed\n\n", b.Diverged, plural(len(b.Sessions), "recording"), b.Failed)
	}
	fmt.Fprintf(&sb, "%s.\n", b.Totals())
	if line := b.classLine(" · "); line != "" {
		fmt.Fprintf(&sb, "\nDivergence classes: %s\n", line)
	}
	if b.Diverged+b.Failed+b.Expected+b.Interrupted > 0 {
		sb.WriteString("\n| recording | result | divergences | first divergence / reason |\n|---|---|---|---|\n")
		for _, s := range b.Sessions {
			switch s.Verdict {
			case VerdictDiverged:
				fmt.Fprintf(&sb, "| %s | diverged | %d | %s |\n", compare.MarkdownCell(s.Recording), len(s.Result.Report.Divergences), compare.MarkdownCell(s.firstLine()))
			case VerdictFailed:
				fmt.Fprintf(&sb, "| %s | **failed** | | %s |\n", compare.MarkdownCell(s.Recording), compare.MarkdownCell(s.Reason()))
			case VerdictExpected, VerdictInterrupted:
				fmt.Fprintf(&sb, "| %s | %s | %d | %s |\n", compare.MarkdownCell(s.Recording), s.Verdict, len(s.Result.Report.Divergences), compare.MarkdownCell(s.Reason()))
			}
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// SessionSummary is a session as the JSON batch summary shows it.
type SessionSummary struct {
	Recording string  `json:"recording"`
	Verdict   Verdict `json:"verdict"`
	// Replay is the replay's trajectory; empty for a failed session.
	Replay string `json:"replay,omitempty"`
	// Workspace is set when the workspace was kept.
	Workspace   string        `json:"workspace,omitempty"`
	Divergences int           `json:"divergences"`
	Counts      map[Class]int `json:"counts,omitempty"`
	First       *Divergence   `json:"first,omitempty"`
	Notes       []string      `json:"notes,omitempty"`
	// Reason is why a failed session could not be replayed.
	Reason string `json:"reason,omitempty"`
	// BadInput says the failure was the input's, not retrace's.
	BadInput bool `json:"bad_input,omitempty"`
}

// BatchSummary is the JSON form of a Batch.
type BatchSummary struct {
	Recordings int `json:"recordings"`
	Identical  int `json:"identical"`
	Diverged   int `json:"diverged"`
	Failed     int `json:"failed"`
	// Expected, Exhibits and Interrupted count those verdicts.
	Expected    int              `json:"expected,omitempty"`
	Exhibits    int              `json:"exhibits,omitempty"`
	Interrupted int              `json:"interrupted,omitempty"`
	Classes     map[Class]int    `json:"classes"`
	Sessions    []SessionSummary `json:"sessions"`
}

// Summary returns the batch in the shape of its JSON summary.
func (b Batch) Summary() BatchSummary {
	out := BatchSummary{Recordings: len(b.Sessions), Identical: b.Identical, Diverged: b.Diverged, Failed: b.Failed,
		Expected: b.Expected, Exhibits: b.Exhibits, Interrupted: b.Interrupted,
		Classes: b.Classes, Sessions: make([]SessionSummary, 0, len(b.Sessions))}
	for _, s := range b.Sessions {
		ss := SessionSummary{Recording: s.Recording, Verdict: s.Verdict, Reason: s.Reason(), BadInput: s.BadInput()}
		if s.Result.Path != "" {
			ss.Replay, ss.Divergences, ss.Notes = s.Result.Path, len(s.Result.Report.Divergences), s.Result.Report.Notes
			if len(s.Result.Report.Counts) > 0 {
				ss.Counts = s.Result.Report.Counts
			}
			if !s.Result.Removed {
				ss.Workspace = s.Result.Workspace
			}
			if d, ok := s.Result.Report.First(); ok {
				ss.First = &d
			}
		}
		out.Sessions = append(out.Sessions, ss)
	}
	return out
}
