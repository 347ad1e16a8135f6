package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// bufSize bounds the lines batched between writes: the events that are not
// written ahead (see writesAhead) wait here for the next one that is.
// Lines longer than this (a model request carrying a large file) are
// written straight through.
const bufSize = 64 << 10

// createAttempts bounds the retries when a generated session id names a
// file that already exists.
const createAttempts = 10

// ErrClosed is the error for using a Recorder after Close. An Emit after
// Close is not reported to the caller; Stats.FirstError wraps ErrClosed.
var ErrClosed = errors.New("recorder is closed")

// Options configures a Recorder. The zero value is ready to use.
type Options struct {
	// SessionID is the session id; when empty, NewSessionID makes one.
	SessionID string
	// Clock gives the time of each event (in any zone: it is written in
	// UTC) and of the session id. The default is time.Now.
	Clock func() time.Time
	// Redactor removes secrets from every line. The default is
	// DefaultRedactor; there is no way to record without one.
	Redactor *Redactor
	// Key, when set, signs session_start (see Key): the recording is then
	// recognised as this key's user's own.
	Key *Key
}

// Recorder is the trajectory.Sink that writes one session's events as a
// JSONL trajectory. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	w      io.Writer
	file   *os.File // the file Create opened, closed by Close
	syncer *os.File // fsynced by Sync: file, or w when it is a regular file
	path   string
	// unnamed is the hidden name Create opened the file under, until the
	// first write gives it path (see publish); "" after that.
	unnamed string
	name    string // for messages: the path, or a description of w
	session string
	clock   func() time.Time
	red     *Redactor
	key     *Key

	seq     int64
	line    []byte // encode buffer, reused
	pending []byte // lines waiting to be written
	// werr is the first write error. It is sticky: nothing is written in
	// the normal way after it, Err returns it, and the runtime starts no
	// effect from then on.
	werr error
	// held are the bytes that did not reach the file since werr (the rest
	// of a torn line, then every line emitted after it), heldLines their
	// count of lines. They are written in one go when session_end is
	// emitted and at Close (see retryHeld), so that the end of the
	// session is in the file when the space came back; a hole in the
	// middle never is. After more than heldMax bytes they are dropped
	// for good (dropped is then set).
	held      []byte
	heldLines int64
	dropped   bool
	recovered bool // everything held was written after all
	closed    bool
	closeErr  error
	stats     Stats
}

// heldMax bounds the bytes a Recorder keeps after a write error: enough
// for the outcomes of the running calls, their results and session_end.
const heldMax = 1 << 20

var _ trajectory.Sink = (*Recorder)(nil)

// Create starts recording a new session in dir: it creates dir if needed and
// a new file for <dir>/<session id>.jsonl, which must not exist yet. When
// the generated session id is taken (two sessions started in the same
// millisecond and drew the same random part), it tries another one.
//
// The file is created under a hidden name, .<session id>.jsonl.pending,
// and takes its real name with the first write, which holds session_start
// whole; a session that recorded nothing leaves no file. So a trajectory
// file is never empty, even when the process dies right after Create.
func Create(dir string, opts Options) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recorder: cannot create run directory %s: %w (check that its parent is writable, or record to another directory)", dir, bareErr(err))
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	id, generated := opts.SessionID, opts.SessionID == ""
	if !generated && !validSessionID(id) {
		return nil, fmt.Errorf("recorder: session id %q cannot name a file: want letters, digits, _ . - (leave Options.SessionID empty to generate one)", id)
	}
	for attempt := 1; ; attempt++ {
		if generated {
			id = NewSessionID(clock())
		}
		path := filepath.Join(dir, id+trajectory.Ext)
		unnamed := filepath.Join(dir, "."+id+trajectory.Ext+".pending")
		var f *os.File
		_, err := os.Lstat(path)
		switch {
		case err == nil:
			err = fs.ErrExist
		case errors.Is(err, fs.ErrNotExist):
			f, err = os.OpenFile(unnamed, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		}
		switch {
		case err == nil:
			opts.SessionID, opts.Clock = id, clock
			r := newRecorder(f, opts)
			r.file, r.syncer, r.path, r.unnamed, r.name = f, f, path, unnamed, path
			return r, nil
		case errors.Is(err, fs.ErrExist) && generated && attempt < createAttempts:
			continue
		case errors.Is(err, fs.ErrExist) && !generated:
			return nil, fmt.Errorf("recorder: trajectory file %s already exists: %w (a session id names one session; leave Options.SessionID empty to generate a new one)", path, bareErr(err))
		default:
			return nil, fmt.Errorf("recorder: cannot create trajectory file %s: %w (check that the directory is writable)", path, bareErr(err))
		}
	}
}

// New returns a Recorder that writes to w, such as a buffer in a test or
// standard output. Close flushes w but does not close it; Sync fsyncs w
// only when it is an *os.File naming a regular file.
func New(w io.Writer, opts Options) *Recorder {
	if opts.SessionID == "" {
		clock := opts.Clock
		if clock == nil {
			clock = time.Now
		}
		opts.SessionID = NewSessionID(clock())
	}
	r := newRecorder(w, opts)
	r.name = "trajectory writer"
	if f, ok := w.(*os.File); ok {
		r.name = f.Name()
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			r.syncer = f
		}
	}
	return r
}

func newRecorder(w io.Writer, opts Options) *Recorder {
	r := &Recorder{w: w, session: opts.SessionID, clock: opts.Clock, red: opts.Redactor, key: opts.Key}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.red == nil {
		r.red = DefaultRedactor()
	}
	r.pending = make([]byte, 0, bufSize)
	return r
}

// validSessionID reports whether id is safe as a file name on every system:
// a label without the colon Windows forbids.
func validSessionID(id string) bool {
	return trajectory.IsLabel(id) && !strings.Contains(id, ":")
}

// bareErr strips the *fs.PathError around err, whose path the message
// already names, keeping the cause for errors.Is.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SessionID returns the session id written in every event.
func (r *Recorder) SessionID() string { return r.session }

// Path returns the path of the trajectory file, or "" for a Recorder made
// by New. The file has that name from the first write on (see Create).
func (r *Recorder) Path() string { return r.path }

// Stats returns a snapshot of the counts so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Emit records one event of the given model turn; it implements
// trajectory.Sink. It fills in the envelope, replaces label values that are
// not labels, redacts secrets and writes the line. It never fails and never
// panics: every problem is counted in Stats instead. An event that fails
// Event.Validate is still written, so that nothing is lost, and counted as
// Invalid. Events that announce or complete an effect (see the package
// doc) are written to the file before Emit returns; session_end is also
// fsynced.
func (r *Recorder) Emit(turn int, p trajectory.Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if v := recover(); v != nil {
			r.stats.EncodeErrors++
			r.fail(fmt.Errorf("recorder: %s: panic while recording a %s event: %v", r.name, typeName(p), v))
		}
	}()
	r.emit(turn, p)
}

func (r *Recorder) emit(turn int, p trajectory.Payload) {
	if r.closed {
		r.stats.Dropped++
		r.fail(fmt.Errorf("recorder: %s: %s event emitted after Close: %w", r.name, typeName(p), ErrClosed))
		return
	}
	if isNil(p) {
		r.stats.EncodeErrors++
		r.fail(fmt.Errorf("recorder: %s: Emit got a nil %s payload", r.name, typeName(p)))
		return
	}
	p, fixes := fixLabels(p)
	r.stats.LabelFixes += int64(fixes)
	if start, ok := p.(*trajectory.SessionStart); ok && r.key != nil {
		// Signed as written; a line the redactor then changes no longer
		// checks, so such a recording is treated as someone else's.
		c := *start // p may be the caller's
		if sig, err := r.key.Sign(r.session, &c); err == nil {
			c.Signature = sig
		}
		p = &c
	}
	if end, ok := p.(*trajectory.SessionEnd); ok {
		c := *end // p may be the caller's
		c.RecorderErrors = r.stats.Problems()
		p = &c
	}
	ev := trajectory.Event{V: trajectory.Version, Session: r.session, Seq: r.seq + 1, TS: r.clock().UTC(), Turn: turn, Payload: p}
	line, err := trajectory.AppendEvent(r.line[:0], ev)
	if err != nil {
		// The seq is not spent, so the file has no gap for this event.
		r.line = line[:0]
		r.stats.EncodeErrors++
		r.fail(fmt.Errorf("recorder: %s: %w", r.name, err))
		return
	}
	r.seq++
	if err := ev.Validate(); err != nil {
		r.stats.Invalid++
		if r.stats.FirstInvalid == nil {
			r.stats.FirstInvalid = fmt.Errorf("%s event seq %d: %w", ev.Type(), ev.Seq, err)
		}
	}
	out, n := r.red.Redact(line)
	r.stats.Redactions += int64(n)
	if n == 0 {
		out = append(line, '\n')
		r.line = out
	} else {
		r.line = line
		out = append(out, '\n')
	}
	r.write(out)
	switch {
	case ev.Type() == trajectory.TypeSessionEnd:
		_ = r.flush()
		r.retryHeld()
		_ = r.sync()
	case writesAhead(ev.Type()):
		_ = r.flush()
	}
}

// writesAhead reports whether an event of type t is written to the file
// before Emit returns. Every type is, except the few that are always
// followed, before any effect can start, by one that is: an outcome by its
// tool_end (the same function emits both), a hook_run by the permission
// decision or the tool_end of its call, and a tool_result or reminder by
// the next model_request or session_end. Batching those saves a write(2)
// each without weakening the promise that a call's side effects never
// precede its events in the file; none of them is shown on the live
// transcript before the event that writes it. A type not named here is
// written ahead, so a new event type fails safe.
func writesAhead(t trajectory.EventType) bool {
	switch t {
	case trajectory.TypeToolSuccess, trajectory.TypeToolFailure, trajectory.TypeHookRun,
		trajectory.TypeToolResult, trajectory.TypeReminder:
		return false
	}
	return true
}

// write buffers one line, or writes it straight through when it is larger
// than the buffer.
func (r *Recorder) write(line []byte) {
	if len(r.pending)+len(line) > bufSize {
		_ = r.flush() // a failure is counted and sets r.werr
	}
	if r.werr != nil {
		r.stats.WriteErrors++
		r.hold(line, 1)
		return
	}
	r.stats.Events++
	r.stats.Bytes += int64(len(line))
	if len(line) > bufSize {
		_ = r.writeOut(line)
		return
	}
	r.pending = append(r.pending, line...)
}

// flush writes the buffered lines.
func (r *Recorder) flush() error {
	if r.werr != nil {
		return r.werr
	}
	err := r.writeOut(r.pending)
	r.pending = r.pending[:0]
	return err
}

// writeOut writes b, whole lines already counted in Events and Bytes. On
// failure the lines that did not make it (a torn one included) move from
// Events to WriteErrors, and the writer is not used again: a file that
// stops at a torn line is read as a crash, one with holes in the middle is
// not read at all.
func (r *Recorder) writeOut(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := r.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err == nil {
		return r.publish()
	}
	n = min(max(n, 0), len(b))
	kept := bytes.LastIndexByte(b[:n], '\n') + 1
	lost := int64(bytes.Count(b[kept:], []byte{'\n'}))
	r.stats.Events -= lost
	r.stats.Bytes -= int64(len(b) - kept)
	r.stats.WriteErrors += lost
	r.werr = fmt.Errorf("recorder: write %s: %w", r.name, bareErr(err))
	r.fail(r.werr)
	// The file ends where the write stopped, maybe inside a line: what
	// is held starts with the rest of that line.
	r.hold(b[n:], lost)
	return r.werr
}

// hold keeps bytes that could not be written since werr, lines of them,
// for retryHeld; past heldMax it drops them all for good, since writing
// what comes after a dropped line would leave a hole in the file.
func (r *Recorder) hold(b []byte, lines int64) {
	r.recovered = false
	if r.dropped {
		return
	}
	if len(r.held)+len(b) > heldMax {
		r.held, r.heldLines, r.dropped = nil, 0, true
		return
	}
	r.held = append(r.held, b...)
	r.heldLines += lines
}

// retryHeld tries once more to write what did not reach the file since
// werr, so that a session stopped by a full disk ends with its last
// outcomes and session_end when space came back meanwhile. werr stays: the
// session was stopped and stays stopped. A retry that fails again keeps
// what it could not write for the next one (Close).
func (r *Recorder) retryHeld() {
	if r.werr == nil || r.dropped || len(r.held) == 0 {
		return
	}
	n, err := r.w.Write(r.held)
	if err == nil && n < len(r.held) {
		err = io.ErrShortWrite
	}
	if err == nil {
		r.stats.Events += r.heldLines
		r.stats.Bytes += int64(len(r.held))
		r.stats.WriteErrors -= r.heldLines
		r.held, r.heldLines = nil, 0
		r.recovered = r.publish() == nil
		return
	}
	n = min(max(n, 0), len(r.held))
	done := int64(bytes.Count(r.held[:n], []byte{'\n'}))
	r.stats.Events += done
	r.stats.Bytes += int64(n)
	r.stats.WriteErrors -= done
	r.heldLines -= done
	r.held = r.held[n:]
}

// Err returns the error that stopped the recorder: nil while every event
// emitted so far is in the file or waits in the buffer for the next event
// written ahead, and from the first write failure on (a full disk, an I/O
// error) that failure, for good. It also notices that the file was
// removed (its run directory deleted), which write(2) does not report: the
// writes would succeed into a file no one can read. The runtime calls it
// before each effect starts, and starts none once it is not nil (see the
// package doc, Durability). The error names the file.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.werr == nil && r.file != nil {
		if removed(r.file) {
			r.werr = fmt.Errorf("recorder: the trajectory file %s was removed while the session ran: %w", r.name, fs.ErrNotExist)
			r.fail(r.werr)
		}
	}
	return r.werr
}

// publish gives the file Create made its real name, once its first lines
// are in it. A hard link makes the name appear atomically and fails if
// another process took it meanwhile; a file system without hard links
// gets a rename, which Create's check for the name makes safe but for that
// race.
func (r *Recorder) publish() error {
	if r.unnamed == "" {
		return nil
	}
	unnamed := r.unnamed
	r.unnamed = ""
	err := os.Link(unnamed, r.path)
	switch {
	case err == nil:
		_ = os.Remove(unnamed) // a leftover hidden link is harmless
		return nil
	case !errors.Is(err, fs.ErrExist):
		if err = os.Rename(unnamed, r.path); err == nil {
			return nil
		}
	}
	// The lines are in a file no reader looks at: none was recorded.
	r.stats.WriteErrors += r.stats.Events
	r.stats.Events, r.stats.Bytes = 0, 0
	r.werr = fmt.Errorf("recorder: cannot name the trajectory file %s: %w (another session may have taken the name; the events are in %s)", r.path, bareErr(err), unnamed)
	r.fail(r.werr)
	return r.werr
}

// sync fsyncs the file, when there is one.
func (r *Recorder) sync() error {
	if r.syncer == nil {
		return nil
	}
	if err := r.syncer.Sync(); err != nil {
		r.stats.SyncErrors++
		err = fmt.Errorf("recorder: fsync %s: %w", r.name, bareErr(err))
		r.fail(err)
		return err
	}
	return nil
}

// fail keeps the first error.
func (r *Recorder) fail(err error) {
	if r.stats.FirstError == nil {
		r.stats.FirstError = err
	}
}

// Flush writes the buffered events to the underlying writer. After a write
// error it returns that error; nothing more is written.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recorder: flush %s: %w", r.name, ErrClosed)
	}
	return r.flush()
}

// Sync flushes the buffered events and, when the Recorder writes to a file,
// fsyncs it, so that they survive a crash of the machine.
func (r *Recorder) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recorder: sync %s: %w", r.name, ErrClosed)
	}
	ferr := r.flush()
	return errors.Join(ferr, r.sync())
}

// Close flushes, fsyncs and closes the file (a writer given to New is
// flushed but not closed) and returns the final stats. Close is
// idempotent: later calls return the same stats and error. The error is
// about flushing, fsyncing or closing; what went wrong earlier is in
// Stats.FirstError. Events emitted after Close are counted as Dropped.
func (r *Recorder) Close() (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.stats, r.closeErr
	}
	r.closed = true
	ferr := r.flush()
	r.retryHeld()
	if ferr != nil && r.recovered {
		// Everything lost to the write error was written after all.
		ferr = nil
	}
	serr := r.sync()
	var cerr error
	if r.file != nil {
		if err := r.file.Close(); err != nil {
			r.stats.SyncErrors++
			cerr = fmt.Errorf("recorder: close %s: %w", r.name, bareErr(err))
			r.fail(cerr)
		}
	}
	if r.unnamed != "" {
		// Nothing was ever written: leave no empty trajectory behind.
		_ = os.Remove(r.unnamed)
		r.unnamed = ""
	}
	r.closeErr = errors.Join(ferr, serr, cerr)
	r.line, r.pending = nil, nil
	return r.stats, r.closeErr
}

// isNil reports whether p is nil or a nil pointer, which encodes as null
// and would make a broken line.
func isNil(p trajectory.Payload) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// typeName names p's event type for messages; it never panics, since the
// payloads' EventType methods do not use their receiver.
func typeName(p trajectory.Payload) string {
	if p == nil {
		return "untyped"
	}
	return string(p.EventType())
}
