package detectors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// Report is what a run of detectors found.
type Report struct {
	// Detectors are the detectors that ran, in catalog order.
	Detectors []Info `json:"detectors"`
	// Findings are sorted worst first: by severity, then detector, file
	// and line.
	Findings []Finding `json:"findings"`
	// Sessions and Events count what the Go detectors read.
	Sessions int `json:"sessions"`
	Events   int `json:"events"`
	// Unread lists the trajectory files only the SQL detectors saw: the Go
	// detectors read the files again, and stdin, a pipe, or the source of
	// a Parquet export that is no longer there cannot be.
	Unread []string `json:"unread,omitempty"`
}

// Counts returns the number of findings per detector id.
func (r Report) Counts() map[string]int {
	n := map[string]int{}
	for _, f := range r.Findings {
		n[f.Detector]++
	}
	return n
}

// Worst returns the highest severity among the findings, or "" for none.
func (r Report) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// Run runs ds over what is loaded into db: the SQL detectors over the
// views, and the Go detectors over each session's events, read again from
// the trajectory files the events were loaded from (the file column), so
// the files a lenient load left out are left out here too; the lines it
// skipped are skipped and the events it dropped dropped, so both kinds of
// detector see the same events. A file that is no longer there, or is not
// a regular file (stdin, a pipe), is listed in Report.Unread.
func Run(ctx context.Context, db *metrics.DB, ds []Detector) (Report, error) {
	rep := Report{Findings: []Finding{}}
	for _, d := range ds {
		rep.Detectors = append(rep.Detectors, d.Info())
	}
	for _, d := range ds {
		fs, err := d.Corpus(ctx, db)
		if err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	files, err := db.Query(ctx, "SELECT DISTINCT file FROM raw_events WHERE file IS NOT NULL ORDER BY file")
	if err != nil {
		return rep, fmt.Errorf("detect: %w", err)
	}
	for _, row := range files.Rows {
		file := text(row[0])
		if info, err := os.Stat(file); file == trajectory.StdinName || err != nil || !info.Mode().IsRegular() {
			rep.Unread = append(rep.Unread, file)
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := readSessions(file, func(s *Session) {
			rep.Sessions++
			rep.Events += len(s.Events)
			for _, d := range ds {
				rep.Findings = append(rep.Findings, d.Session(s)...)
			}
		}); err != nil {
			return rep, err
		}
	}
	order := map[string]int{}
	for i, d := range catalog {
		order[d.Info().ID] = i
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
			cmp.Compare(order[a.Detector], order[b.Detector]),
			cmp.Compare(a.File(), b.File()),
			cmp.Compare(a.Line(), b.Line()),
			cmp.Compare(a.Session, b.Session))
	})
	return rep, nil
}

// readSessions reads file and calls fn with each session's events: when
// its session_end is read, else at the end of the file. Lines that do not
// decode are skipped and events whose seq does not increase dropped, as a
// lenient load does; a strict load has refused such a file already.
func readSessions(file string, fn func(*Session)) error {
	fh, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	defer fh.Close()
	dec := trajectory.NewDecoder(fh, file)
	open := map[string]*Session{}
	var order []string
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *trajectory.LineError
		if errors.As(err, &le) {
			if errors.Is(err, trajectory.ErrBinary) {
				return fmt.Errorf("detect: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("detect: %w", err)
		}
		s := open[ev.Session]
		if s == nil {
			s = &Session{ID: ev.Session, File: file}
			open[ev.Session] = s
			order = append(order, ev.Session)
		}
		if n := len(s.Events); n > 0 && ev.Seq <= s.Events[n-1].Seq {
			continue
		}
		s.Events = append(s.Events, Located{Event: ev, Line: dec.Line()})
		if ev.Type() == trajectory.TypeSessionEnd {
			fn(s)
			delete(open, ev.Session)
		}
	}
	for _, id := range order {
		if s := open[id]; s != nil {
			fn(s)
		}
	}
	return nil
}

// parseStrings reads a JSON list of strings an SQL detector returns.
func parseStrings(v any) ([]string, error) {
	var ss []string
	if err := json.Unmarshal([]byte(text(v)), &ss); err != nil {
		return nil, fmt.Errorf("sessions %v: %w", v, err)
	}
	return ss, nil
}
