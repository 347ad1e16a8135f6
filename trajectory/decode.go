package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultMaxLineBytes is the longest line a Decoder accepts by default. A
// model request that carries a large file read is big, but a line past this
// is far more likely a corrupt or foreign file than a real event.
const DefaultMaxLineBytes = 64 << 20

// Warning is a problem the reader noticed that does not make the data wrong,
// such as a last line torn by a crash in the middle of a write.
type Warning struct {
	File string
	Line int
	Msg  string
}

// String renders the warning as "file:line: warning: msg", or as
// "file: warning: msg" for a warning about a whole file (Line 0).
func (w Warning) String() string {
	if w.Line == 0 {
		return fmt.Sprintf("%s: warning: %s", w.File, w.Msg)
	}
	return fmt.Sprintf("%s:%d: warning: %s", w.File, w.Line, w.Msg)
}

// Decoder reads events from a JSONL trajectory, one line at a time, in
// constant memory whatever the size of the input. After a malformed line
// Next returns its *LineError and the following call goes on with the next
// line, so a caller can report every bad line or skip them.
type Decoder struct {
	r        *bufio.Reader
	name     string
	line     int
	maxLine  int
	parser   *lineParser
	raw      []byte
	warnings []Warning
	done     bool
}

// NewDecoder returns a decoder reading r; name is used in errors (a path).
func NewDecoder(r io.Reader, name string) *Decoder {
	br, _ := readers.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(r, 16<<10)
	} else {
		br.Reset(r)
	}
	p, _ := parsers.Get().(*lineParser)
	if p == nil {
		p = &lineParser{}
	}
	p.reference = referenceDecoding.Load()
	return &Decoder{r: br, name: name, maxLine: DefaultMaxLineBytes, parser: p}
}

// readers keeps the read buffers of the Decoders that reached their end:
// a corpus of many small files would otherwise allocate a buffer per file,
// more than the events of a file take.
var readers sync.Pool

// parsers keeps the line parsers of the Decoders that reached their end,
// with the buffers they grew (line, members, scratch lists, intern
// table): a corpus of many small files would otherwise grow them again
// for every file, a fifth of a corpus decode's allocated bytes.
var parsers sync.Pool

// maxPooledLine is the largest line buffer kept for the next Decoder: a
// rare huge line must not stay in memory for the life of the process.
const maxPooledLine = 1 << 20

// finish marks the input as read to its end and gives the buffers back.
// Raw is nil from then on: its bytes belong to the next Decoder.
func (d *Decoder) finish() {
	d.done = true
	d.raw = nil
	if d.r != nil {
		d.r.Reset(nil)
		readers.Put(d.r)
		d.r = nil
	}
	if p := d.parser; p != nil {
		d.parser = nil
		if cap(p.line) > maxPooledLine {
			p.line = nil
		}
		if cap(p.scratch) > maxPooledLine {
			p.scratch = nil
		}
		p.dec, p.feed.data, p.lastSession = nil, nil, ""
		clear(p.members[:cap(p.members)])
		p.members = p.members[:0]
		p.early = earlyDecode{}
		parsers.Put(p)
	}
}

// referenceDecoding is set by SetReferenceDecoding.
var referenceDecoding atomic.Bool

// SetReferenceDecoding makes the Decoders created afterwards decode every
// payload with encoding/json, as retrace did before its fast decoder, or,
// with false, with the fast decoder again (the default). Both accept the
// same lines and give the same events and errors; the reference is slower
// by about three times. It exists so that benchmarks in other packages can
// measure the old decoder as their baseline, and so that a suspected
// decoding difference can be checked against the reference.
func SetReferenceDecoding(on bool) { referenceDecoding.Store(on) }

// SetMaxLineBytes changes the longest line the decoder accepts.
func (d *Decoder) SetMaxLineBytes(n int) { d.maxLine = n }

// Line returns the line number of the event or error Next last returned.
func (d *Decoder) Line() int { return d.line }

// Raw returns the bytes of the line Next last returned an event for,
// without its newline (and without a byte order mark on line 1). They are
// valid until the next call to Next; a caller that copies checked lines
// elsewhere uses them instead of re-encoding the event.
func (d *Decoder) Raw() []byte { return d.raw }

// Member returns where the value of the top-level member key of the last
// line sits in Raw, Raw()[start:end] being its JSON text, and whether the
// line has that member. It is meant for an event Next returned without an
// error, until the next call; at the end of the input there is no line.
func (d *Decoder) Member(key string) (start, end int, ok bool) {
	if d.parser == nil {
		return 0, 0, false
	}
	for _, m := range d.parser.members {
		if string(m.key) == key {
			return m.end - len(m.val), m.end, true
		}
	}
	return 0, 0, false
}

// Warnings returns the warnings noticed so far.
func (d *Decoder) Warnings() []Warning { return d.warnings }

// Next returns the next event. At the end of the input it returns io.EOF.
// Errors about the content are *LineError values wrapping a sentinel. When
// a line's envelope and JSON are sound and only a field is wrong (an
// unknown value, a missing or unknown field), the returned event holds what
// was decoded alongside the error, so a checker can still follow the
// session; its Payload is nil when nothing usable was decoded.
// Blank lines are skipped. A malformed last line without a newline is a
// torn write: it becomes a Warning and Next returns io.EOF.
func (d *Decoder) Next() (Event, error) {
	for !d.done {
		line, complete, err := d.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				d.finish()
				return Event{}, io.EOF
			}
			if errors.Is(err, ErrBinary) {
				d.finish()
			}
			return Event{}, &LineError{File: d.name, Line: d.line, Err: err}
		}
		if d.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		d.raw = line
		ev, err := d.parser.decode(line)
		if err != nil {
			if !complete && ev.Payload == nil {
				d.finish()
				d.warnings = append(d.warnings, Warning{File: d.name, Line: d.line,
					Msg: fmt.Sprintf("last line is torn (no newline, %d bytes that do not decode: %v); a crash in the middle of a write leaves this, and the events before it are intact", len(line), err)})
				return Event{}, io.EOF
			}
			return ev, &LineError{File: d.name, Line: d.line, Err: err}
		}
		return ev, nil
	}
	return Event{}, io.EOF
}

// readLine returns the next line without its newline; complete is false for
// a last line that has no newline. Over-long lines are consumed and
// reported; NUL bytes mean binary input.
func (d *Decoder) readLine() (line []byte, complete bool, err error) {
	d.line++
	buf := d.parser.line[:0]
	defer func() { d.parser.line = buf }()
	tooLong := false
	for {
		chunk, err := d.r.ReadSlice('\n')
		if bytes.IndexByte(chunk, 0) >= 0 {
			return nil, false, fmt.Errorf("%w (NUL byte found); point retrace at .jsonl trajectory files", ErrBinary)
		}
		if !tooLong && len(buf)+len(chunk) > d.maxLine {
			tooLong = true
			buf = buf[:0]
		}
		if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, true, fmt.Errorf("%w: over %d bytes; the line was skipped", ErrLineTooLong, d.maxLine)
			}
			return bytes.TrimSuffix(buf[:len(buf)-1], []byte("\r")), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return nil, false, fmt.Errorf("%w: over %d bytes; the line was skipped", ErrLineTooLong, d.maxLine)
			}
			if len(buf) == 0 {
				return nil, false, io.EOF
			}
			return buf, false, nil
		default:
			return nil, false, fmt.Errorf("read: %w", err)
		}
	}
}

// lineParser holds the buffers reused from line to line.
type lineParser struct {
	// line holds the line being decoded (Decoder.readLine).
	line    []byte
	scratch []byte
	members []member
	feed    feedReader
	dec     *json.Decoder
	fast    fastState
	early   earlyDecode
	checks  checks
	// lastSession is the session id of the last line decoded.
	lastSession string
	// reference makes every payload go through encoding/json, the
	// decoder the fast path replaced; tests use it as the oracle.
	reference bool
}

// unmarshal decodes one JSON value strictly (unknown fields are errors at
// any depth). A json.Decoder is the only stdlib way to be strict; making
// one per line costs more than the decode itself, so one decoder is kept
// and fed a value at a time, and replaced after any error.
func (p *lineParser) unmarshal(data []byte, v any) error {
	if p.dec == nil {
		p.dec = json.NewDecoder(&p.feed)
		p.dec.DisallowUnknownFields()
	}
	p.feed.data = data
	err := p.dec.Decode(v)
	if err != nil || len(p.feed.data) > 0 {
		p.dec, p.feed.data = nil, nil
	}
	return err
}

// feedReader hands a json.Decoder the value it is to decode next. It never
// returns io.EOF, which would poison the decoder; Decode never asks for
// more than one complete value.
type feedReader struct{ data []byte }

func (f *feedReader) Read(b []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(b, f.data)
	f.data = f.data[n:]
	return n, nil
}

// member is one top-level member of a line's object: line[start:end] is
// `"key":value` and val is the raw value.
type member struct {
	key        []byte // raw, unescaped only when it held an escape
	start, end int
	val        []byte
	// decoded is set when scanObject decoded the value into the payload
	// of earlyDecode already.
	decoded bool
	// id names the key once it is looked up (resolveKeys), so that a key
	// is compared with the names once per line, not once per use: the
	// index of a field of the early payload's decoder, idEnvelope plus
	// the index in envelopeKeys, idNone for a key that is neither, or
	// idUnresolved before the look-up (or without a decoder to look in).
	id int
}

// The ids of member keys besides field indexes (0 to 63).
const (
	idEnvelope   = 64
	idNone       = -1
	idUnresolved = -2
)

// resolveKeys gives every member its id, looking keys up in sd (the early
// payload's decoder; nil leaves payload keys unresolved).
func resolveKeys(members []member, sd *structDecoder) {
	for i := range members {
		m := &members[i]
		if m.id != idUnresolved {
			continue
		}
		if k := envelopeIndex(m.key); k >= 0 {
			m.id = idEnvelope + k
		} else if sd != nil {
			if k, ok := sd.lookup(m.key); ok {
				m.id = k
			} else {
				m.id = idNone
			}
		}
	}
}

var envelopeKeys = []string{"v", "session", "seq", "ts", "turn", "type"}

func isEnvelopeKey(k []byte) bool { return envelopeIndex(k) >= 0 }

// envelopeIndex returns the index of k in envelopeKeys, or -1: a switch,
// which compiles to a few comparisons, where a loop over the list would
// compare every key of a line with six names.
func envelopeIndex(k []byte) int {
	switch string(k) {
	case "v":
		return 0
	case "session":
		return 1
	case "seq":
		return 2
	case "ts":
		return 3
	case "turn":
		return 4
	case "type":
		return 5
	}
	return -1
}

// decode decodes one line. On error the event is returned too when its
// payload could be decoded (see Decoder.Next).
func (p *lineParser) decode(line []byte) (Event, error) {
	p.early = earlyDecode{fast: &p.fast}
	if p.reference {
		p.early.off = true
	}
	members, ok := scanObject(line, p.members[:0], &p.early)
	p.members = members
	if !ok {
		return Event{}, syntaxError(line)
	}
	resolveKeys(members, p.early.sd)
	if !distinctKeys(members) {
		if dup := duplicateKey(members); dup != "" {
			return Event{}, &FieldError{Field: dup, Err: ErrMalformed, Detail: "appears twice"}
		}
	}
	var env [6][]byte
	for _, m := range members {
		if m.id >= idEnvelope {
			env[m.id-idEnvelope] = m.val
		}
	}
	var ev Event
	if env[0] == nil {
		return ev, &FieldError{Field: "v", Err: ErrMissingField, Detail: "every event starts with the schema version, v: 2 (or v: 1)"}
	}
	v, err := strconv.Atoi(string(env[0]))
	if err != nil {
		return ev, &FieldError{Field: "v", Err: ErrMalformed, Detail: fmt.Sprintf("got %s, want an integer", truncate(env[0], 40))}
	}
	if !Readable(v) {
		return ev, &FieldError{Field: "v", Err: ErrUnsupportedVersion, Detail: versionDetail(v)}
	}
	ev.V = v
	for k, name := range envelopeKeys[1:] {
		if env[k+1] == nil {
			return ev, &FieldError{Field: name, Err: ErrMissingField, Detail: "part of every event's envelope"}
		}
	}
	if ev.Session, err = p.session(env[1]); err != nil {
		return ev, err
	}
	if ev.Seq, err = strconv.ParseInt(string(env[2]), 10, 64); err != nil {
		return ev, &FieldError{Field: "seq", Err: ErrMalformed, Detail: fmt.Sprintf("got %s, want an integer", truncate(env[2], 40))}
	}
	if ev.TS, err = parseTS(env[3]); err != nil {
		return ev, err
	}
	if ev.Turn, err = strconv.Atoi(string(env[4])); err != nil {
		return ev, &FieldError{Field: "turn", Err: ErrMalformed, Detail: fmt.Sprintf("got %s, want an integer", truncate(env[4], 40))}
	}
	typ, err := p.typeString(env[5])
	if err != nil {
		return ev, err
	}
	if !EventType(typ).Valid() {
		return ev, &FieldError{Field: "type", Err: ErrUnknownValue,
			Detail: fmt.Sprintf("got %q, want one of %s", truncate([]byte(typ), 40), strings.Join(eventTypes.strings(), ", "))}
	}
	// From here on a problem is in one field: the rest of the event is
	// still decoded and returned with the first error.
	var fieldErr error
	if ev.Payload, fieldErr = p.decodePayload(line, members, EventType(typ)); ev.Payload == nil {
		return ev, fieldErr
	}
	if fieldErr == nil {
		// The checks live in the parser: through the payload's validate
		// method they would escape, an allocation per event.
		p.checks = checks{}
		fieldErr = ev.validate(&p.checks)
	}
	return ev, fieldErr
}

// typeString decodes the type member, interned: a file repeats a handful
// of types, and the plain case needs no allocation then.
func (p *lineParser) typeString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && isPlainASCII(raw[1:len(raw)-1]) {
		return p.fast.intern(raw[1 : len(raw)-1]), nil
	}
	return jsonString("type", raw)
}

// isPlainASCII reports whether b holds only printable ASCII other than a
// backslash: a JSON string body that decodes to itself.
func isPlainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// parseTS decodes the ts member as time.Parse(time.RFC3339Nano) does, in
// UTC. The canonical form the recorder writes, 2026-01-02T15:04:05.123Z,
// is parsed from the line's bytes by time.Time.UnmarshalText, which for
// that form runs the same RFC 3339 parser time.Parse tries first, without
// making a string of the bytes. Anything else, and any value that parser
// refuses, goes the way it always went, so what is accepted and every
// error text stay as they were (TestParseTSAgreesWithTimeParse).
func parseTS(raw []byte) (time.Time, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && CanonicalTS(raw[1:len(raw)-1]) {
		var t time.Time
		if t.UnmarshalText(raw[1:len(raw)-1]) == nil {
			return t.UTC(), nil
		}
	}
	ts, err := jsonString("ts", raw)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, &FieldError{Field: "ts", Err: ErrMalformed, Detail: fmt.Sprintf("got %q, want an RFC 3339 time such as 2026-01-02T15:04:05Z", truncate([]byte(ts), 40))}
	}
	return t.UTC(), nil
}

// CanonicalTS reports whether b, a ts value without its quotes, has the
// form the recorder writes, YYYY-MM-DDTHH:MM:SSZ with an optional fraction
// of 1 to 9 digits before the Z: a UTC time every RFC 3339 reader reads as
// the same instant, offset-free parsers included.
func CanonicalTS(b []byte) bool {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(b) < len(layout)+1 || len(b) > len(layout)+11 || b[len(b)-1] != 'Z' {
		return false
	}
	for i := 0; i < len(layout); i++ {
		if layout[i] == 'd' {
			if b[i] < '0' || b[i] > '9' {
				return false
			}
		} else if b[i] != layout[i] {
			return false
		}
	}
	frac := b[len(layout) : len(b)-1]
	if len(frac) == 0 {
		return true
	}
	if len(frac) < 2 || frac[0] != '.' {
		return false
	}
	for _, c := range frac[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decodePayload decodes the payload members of a line of type typ. It
// returns the payload with the first problem of a field that is unknown or
// missing, or a nil payload and the error when the members do not decode.
//
// The fast decoder takes the plain lines; whatever it gives up on,
// encoding/json decodes, accepting or rejecting it as it always has.
func (p *lineParser) decodePayload(line []byte, members []member, typ EventType) (Payload, error) {
	unknown := func(key []byte) error {
		return &FieldError{Field: string(key), Err: ErrMalformed, Detail: fmt.Sprintf("not a field of %s events", typ)}
	}
	missing := func(field string) error {
		return &FieldError{Field: field, Err: ErrMissingField, Detail: fmt.Sprintf("required in %s events", typ)}
	}
	if sd := fastDecoderOf(typ); sd != nil && !p.reference {
		var fieldErr error
		var seen uint64
		ok := true
		// The members after the type member were decoded during the scan,
		// into the early payload, unless a decode failed there.
		var payload Payload
		if e := &p.early; e.payload != nil && e.payload.EventType() == typ && !e.failed {
			payload = e.payload
		} else {
			payload = newPayload(typ)
			for i := range members {
				members[i].decoded = false
			}
		}
		v := reflect.ValueOf(payload).Elem()
		// The ids resolveKeys gave are indexes of sd's fields when sd is
		// the early decoder; otherwise every key is looked up here.
		ids := sd == p.early.sd
		for _, m := range members {
			k, known := m.id, m.id >= 0
			if !ids || m.id == idUnresolved {
				if isEnvelopeKey(m.key) {
					continue
				}
				k, known = sd.lookup(m.key)
			} else if m.id >= idEnvelope {
				continue
			}
			if !known {
				if fieldErr == nil {
					fieldErr = unknown(m.key)
				}
				continue
			}
			seen |= 1 << k
			if ok && !m.decoded {
				f := &sd.fields[k]
				end, good := f.dec(&p.fast, m.val, 0, fieldOf(v, f.index))
				ok = good && end == len(m.val)
			}
		}
		if !ok {
			payload = newPayload(typ)
			if err := p.unmarshalMembers(line, members, payloadFieldsOf(typ), payload); err != nil {
				return nil, payloadError(err)
			}
		}
		if absent := sd.required &^ seen; fieldErr == nil && absent != 0 {
			fieldErr = missing(sd.fields[bits.TrailingZeros64(absent)].name)
		}
		return payload, fieldErr
	}
	var fieldErr error
	payload := newPayload(typ)
	fields := payloadFieldsOf(typ)
	for _, m := range members {
		if !isEnvelopeKey(m.key) && !fields.allowed[string(m.key)] {
			fieldErr = unknown(m.key)
			break
		}
	}
	if err := p.unmarshalMembers(line, members, fields, payload); err != nil {
		return nil, payloadError(err)
	}
	if fieldErr == nil {
		for _, req := range fields.required {
			if !hasMember(members, req) {
				return payload, missing(req)
			}
		}
	}
	return payload, fieldErr
}

// unmarshalMembers decodes the payload members of a line with
// encoding/json: the reference path, for what the fast decoder gives up on.
// The members that are not fields of the payload are left out; the caller
// reports them.
func (p *lineParser) unmarshalMembers(line []byte, members []member, fields payloadFields, payload Payload) error {
	p.scratch = append(p.scratch[:0], '{')
	for _, m := range members {
		if isEnvelopeKey(m.key) || !fields.allowed[string(m.key)] {
			continue
		}
		if len(p.scratch) > 1 {
			p.scratch = append(p.scratch, ',')
		}
		p.scratch = append(p.scratch, line[m.start:m.end]...)
	}
	p.scratch = append(p.scratch, '}')
	return p.unmarshal(p.scratch, payload)
}

// distinctKeys reports, cheaply, that no key of members appears twice,
// when every key is an envelope key or a field of the payload the scan
// found the type of: each then has an id (resolveKeys), and a key given
// twice is an id seen twice. False means only that duplicateKey must look
// (an unknown key, no type found yet, or a duplicate, which duplicateKey
// then names as it always has).
func distinctKeys(members []member) bool {
	var fields, env uint64
	for _, m := range members {
		switch {
		case m.id >= idEnvelope:
			if env&(1<<(m.id-idEnvelope)) != 0 {
				return false
			}
			env |= 1 << (m.id - idEnvelope)
		case m.id >= 0:
			if fields&(1<<m.id) != 0 {
				return false
			}
			fields |= 1 << m.id
		default:
			return false
		}
	}
	return true
}

// duplicateKey returns a key that appears twice, or "". Events have a
// couple of dozen keys, where comparing pairs is fastest; a hostile line
// with many keys must not make that quadratic.
func duplicateKey(members []member) string {
	if len(members) <= 32 {
		for i, m := range members {
			for _, o := range members[i+1:] {
				if len(o.key) == len(m.key) && string(o.key) == string(m.key) {
					return string(m.key)
				}
			}
		}
		return ""
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if seen[string(m.key)] {
			return string(m.key)
		}
		seen[string(m.key)] = true
	}
	return ""
}

func hasMember(members []member, key string) bool {
	for _, m := range members {
		if string(m.key) == key {
			return true
		}
	}
	return false
}

// session decodes the session id, returning the string of the line before
// when it is the same: a file holds one session, and its id is then
// allocated once.
func (p *lineParser) session(raw []byte) (string, error) {
	if p.lastSession != "" && len(raw) == len(p.lastSession)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == p.lastSession {
		return p.lastSession, nil
	}
	s, err := jsonString("session", raw)
	if err == nil {
		p.lastSession = s
	}
	return s, err
}

// jsonString decodes a JSON string value of the envelope.
func jsonString(field string, raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && !hasControl(inner) && utf8.Valid(inner) {
			return string(inner), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
	}
	return "", &FieldError{Field: field, Err: ErrMalformed, Detail: fmt.Sprintf("got %s, want a string", truncate(raw, 40))}
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// syntaxError explains why line is not a JSON object.
func syntaxError(line []byte) error {
	var v any
	err := json.Unmarshal(line, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: invalid JSON at byte %d: %v", ErrMalformed, se.Offset, se)
	case err != nil:
		return fmt.Errorf("%w: invalid JSON: %v", ErrMalformed, err)
	}
	return fmt.Errorf("%w: want one JSON object per line, got %s", ErrMalformed, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "an object with an unusual key"
}

// payloadError turns an encoding/json error into a FieldError.
func payloadError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{Field: jsonPath(te.Field), Err: ErrMalformed, Detail: fmt.Sprintf("got JSON %s, want %s", te.Value, jsonTypeName(te.Type))}
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return &FieldError{Field: strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`), Err: ErrMalformed, Detail: "not a field of this object"}
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// jsonPath drops from an encoding/json field path the Go names of embedded
// structs ("ToolRef.tool" is the JSON field "tool"): contract field names
// are lower case, Go type names are not.
func jsonPath(p string) string {
	parts := strings.Split(p, ".")
	out := parts[:0]
	for _, s := range parts {
		if s != "" && !(s[0] >= 'A' && s[0] <= 'Z') {
			out = append(out, s)
		}
	}
	return strings.Join(out, ".")
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "JSON"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
