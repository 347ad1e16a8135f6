package otlp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/retrace-dev/retrace/trajectory"
)

// DefaultBatchSpans is how many spans Export puts in one request at most
// (a session's spans always go together), well under the 4 MiB request
// size receivers accept by default.
const DefaultBatchSpans = 2000

// SendFunc delivers one batch of sessions' traces and returns how many of
// its spans were accepted.
type SendFunc func(ctx context.Context, batch []ResourceSpans) (int, error)

// Options configures Export.
type Options struct {
	// Files are the trajectory files to export, one session each (see
	// trajectory.Expand).
	Files []string
	// Send delivers each batch: an HTTPSender's Send, or a FileWriter's.
	Send SendFunc
	// BatchSpans bounds the spans of one batch; 0 means DefaultBatchSpans.
	BatchSpans int
	// Progress, when set, is called after each batch with the files done
	// and in all.
	Progress func(done, total int)
}

// Report says what Export did.
type Report struct {
	Counts
	// Accepted counts the spans the receiver accepted.
	Accepted int `json:"accepted_spans"`
	// Requests counts the batches sent.
	Requests int `json:"requests"`
	// Problems are the files that could not be exported (unreadable, a
	// malformed line, no session_start), each naming file:line; the other
	// files are exported.
	Problems []error `json:"-"`
}

// Export reads each trajectory file, turns its session into a trace and
// sends the traces in batches. A file that cannot be read or decoded is a
// problem of the report, not the end of the export; the error is for what
// stops it (the receiver refusing a batch, ctx).
func Export(ctx context.Context, opts Options) (Report, error) {
	var rep Report
	limit := opts.BatchSpans
	if limit <= 0 {
		limit = DefaultBatchSpans
	}
	var batch []ResourceSpans
	pending := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := opts.Send(ctx, batch)
		rep.Accepted += n
		rep.Requests++
		batch, pending = batch[:0], 0
		return err
	}
	for i, f := range opts.Files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		events, err := trajectory.ReadFile(f)
		if le := (*trajectory.LineError)(nil); errors.As(err, &le) {
			rep.Problems = append(rep.Problems, err) // it names file:line
			continue
		} else if err != nil {
			rep.Problems = append(rep.Problems, fmt.Errorf("%s: %w", f, err))
			continue
		}
		rs, c, err := SessionSpans(events)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Errorf("%s: %w", f, err))
			continue
		}
		if pending > 0 && pending+c.Spans > limit {
			if err := flush(); err != nil {
				return rep, err
			}
		}
		batch = append(batch, rs)
		pending += c.Spans
		rep.add(c)
		if opts.Progress != nil {
			opts.Progress(i+1, len(opts.Files))
		}
	}
	if err := flush(); err != nil {
		return rep, err
	}
	return rep, nil
}

// FileWriter writes batches as OTLP/JSON, one TracesData object per line
// (the layout of the Collector's file exporter), which Import reads back.
type FileWriter struct {
	W io.Writer
}

// Send writes one batch as one line; every span counts as accepted.
func (fw *FileWriter) Send(_ context.Context, batch []ResourceSpans) (int, error) {
	b, err := json.Marshal(TracesData{ResourceSpans: batch})
	if err != nil {
		return 0, err
	}
	if _, err := fw.W.Write(append(b, '\n')); err != nil {
		return 0, err
	}
	n := 0
	for i := range batch {
		for j := range batch[i].ScopeSpans {
			n += len(batch[i].ScopeSpans[j].Spans)
		}
	}
	return n, nil
}
