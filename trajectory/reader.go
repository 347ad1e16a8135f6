package trajectory

import (
	"errors"
	"io"
	"os"
)

// Reader streams the events of many trajectory files, one file after the
// other, in constant memory. Open it with paths as Expand takes them.
type Reader struct {
	files    []string
	next     int
	stdin    io.Reader
	f        io.Closer
	dec      *Decoder
	warnings []Warning
}

// Open expands paths (files, directories, globs, Stdin) and returns a
// Reader over the inputs they name, in sorted order. Non-regular entries of
// directories and globs are left out, as ExpandInputs does; an entry that
// cannot be examined is an error.
func Open(paths ...string) (*Reader, error) {
	files, err := Expand(paths...)
	if err != nil {
		return nil, err
	}
	return &Reader{files: files}, nil
}

// SetStdin sets what the path Stdin reads; without it, Stdin is an error.
func (r *Reader) SetStdin(in io.Reader) { r.stdin = in }

// Files returns the files the reader reads, in order.
func (r *Reader) Files() []string { return r.files }

// Next returns the next event of the current file, moving on to the next
// file at the end of one, and io.EOF after the last. Content errors are
// *LineError values as Decoder.Next returns them; the reader goes on after
// them. A file that cannot be opened is a *FileError wrapping ErrUnreadable,
// and the reader goes on with the next file.
func (r *Reader) Next() (Event, error) {
	for {
		if r.dec == nil {
			if r.next == len(r.files) {
				return Event{}, io.EOF
			}
			f, err := OpenInput(r.files[r.next], r.stdin)
			if err != nil {
				r.next++
				return Event{}, err
			}
			r.f, r.dec = f, NewDecoder(f, Name(r.files[r.next]))
			r.next++
		}
		ev, err := r.dec.Next()
		if !errors.Is(err, io.EOF) {
			return ev, err
		}
		r.warnings = append(r.warnings, r.dec.Warnings()...)
		r.closeFile()
	}
}

// File and Line locate the event or error Next last returned.
func (r *Reader) File() string {
	if r.next == 0 {
		return ""
	}
	return Name(r.files[r.next-1])
}

// Line returns the line of the event or error Next last returned.
func (r *Reader) Line() int {
	if r.dec == nil {
		return 0
	}
	return r.dec.Line()
}

// Warnings returns the warnings of the files read to their end so far.
func (r *Reader) Warnings() []Warning { return r.warnings }

// Close releases the open file, if any.
func (r *Reader) Close() error {
	r.closeFile()
	return nil
}

func (r *Reader) closeFile() {
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.dec = nil, nil
}

// ReadFile reads every event of one trajectory file into memory, for the
// consumers that need a whole session at once (replay, comparison). The
// first malformed line is an error; a torn last line is not (the events
// before it are returned).
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := NewDecoder(f, path)
	var out []Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}
