package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// tsLayout is RFC 3339 with fixed-width nanoseconds, so that timestamps of
// one file line up and sort as text.
const tsLayout = "2006-01-02T15:04:05.000000000Z07:00"

var payloadBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// AppendEvent appends the JSON line of e (without the newline) to dst: the
// envelope fields first, in contract order, then the payload's fields. It
// does not validate e; Event.Validate does.
func AppendEvent(dst []byte, e Event) ([]byte, error) {
	if isNilPayload(e.Payload) {
		return dst, fmt.Errorf("encode event seq %d: %w", e.Seq, &FieldError{Field: "type", Err: ErrMissingField, Detail: "event has no payload"})
	}
	buf := payloadBufs.Get().(*bytes.Buffer)
	defer payloadBufs.Put(buf)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.Payload); err != nil {
		return dst, fmt.Errorf("encode %s event seq %d: %w", e.Type(), e.Seq, err)
	}
	payload := bytes.TrimRight(buf.Bytes(), "\n")

	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(e.V), 10)
	dst = append(dst, `,"session":`...)
	dst = appendString(dst, e.Session)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"ts":"`...)
	dst = e.TS.UTC().AppendFormat(dst, tsLayout)
	dst = append(dst, `","turn":`...)
	dst = strconv.AppendInt(dst, int64(e.Turn), 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(e.Type()))
	if len(payload) > 2 { // not "{}"
		dst = append(dst, ',')
		dst = append(dst, payload[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return dst, nil
}

// appendString appends s as a JSON string. Plain ASCII, the common case for
// envelope values, is copied as is; anything else goes through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// MarshalJSON encodes the event as its trajectory line.
func (e Event) MarshalJSON() ([]byte, error) { return AppendEvent(nil, e) }

// UnmarshalJSON decodes and validates one trajectory line.
func (e *Event) UnmarshalJSON(b []byte) error {
	var p lineParser
	ev, err := p.decode(b)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// Encoder writes events as JSON lines.
type Encoder struct {
	w   io.Writer
	buf []byte
}

// NewEncoder returns an encoder that writes to w. It does no buffering of
// its own beyond one line; wrap w in a bufio.Writer for throughput.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes e as one line.
func (enc *Encoder) Encode(e Event) error {
	b, err := AppendEvent(enc.buf[:0], e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	enc.buf = b
	_, err = enc.w.Write(b)
	return err
}

// NewEvent returns an event with the envelope filled in for the current
// schema version; tests and tools that write trajectories by hand use it.
func NewEvent(session string, seq int64, ts time.Time, turn int, p Payload) Event {
	return Event{V: Version, Session: session, Seq: seq, TS: ts.UTC(), Turn: turn, Payload: p}
}
