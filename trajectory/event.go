package trajectory

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strconv"
	"time"
)

// Version is the trajectory schema version this build writes. Any change
// to the set of fields or of closed-set values is a new version. Version 2
// records a model_request's messages as a change since the previous
// request (messages_kept, prefix_hash; see Conversation), so a file grows
// linearly with the turns.
const Version = 2

// MinVersion is the oldest version this build reads: v 1 files (every
// model_request with its full message_hashes list) are read as they are.
const MinVersion = 1

// Readable reports whether this build reads files of version v.
func Readable(v int) bool { return v >= MinVersion && v <= Version }

// Event is one line of a trajectory: the envelope and a typed payload.
// The recorder fills V, Session, Seq and TS; the emitter gives Turn and Payload.
type Event struct {
	// V is the schema version (Version).
	V int
	// Session is the session id, sortable by start time.
	Session string
	// Seq numbers the events of a session from 1, without gaps.
	Seq int64
	// TS is when the event was recorded, in UTC.
	TS time.Time
	// Turn is the model turn the event belongs to; 0 before the first request.
	Turn int
	// Payload is the type-specific part; its EventType names the event.
	Payload Payload
}

// Type returns the event type given by the payload, or "" when there is none.
func (e Event) Type() EventType {
	if e.Payload == nil {
		return ""
	}
	return e.Payload.EventType()
}

// Payload is the type-specific part of an event. The set of payloads is
// closed: only this package's payload types implement it.
type Payload interface {
	// EventType returns the event type the payload belongs to.
	EventType() EventType
	validate(c *checks)
}

// isNilPayload reports whether p is nil or a nil pointer: every payload
// type is a pointer, and a typed nil must not reach the encoder.
func isNilPayload(p Payload) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Validate reports the first problem with the event's envelope or payload,
// as an error that wraps ErrMalformed, ErrMissingField, ErrUnknownValue or
// ErrUnsupportedVersion.
func (e Event) Validate() error {
	return e.validate(&checks{})
}

// validate is Validate with the checks state given by the caller, so that
// the decoder reuses one instead of allocating one per event.
func (e Event) validate(c *checks) error {
	c.v = e.V
	switch {
	case !Readable(e.V):
		return &FieldError{Field: "v", Err: ErrUnsupportedVersion, Detail: versionDetail(e.V)}
	case isNilPayload(e.Payload):
		return &FieldError{Field: "type", Err: ErrMissingField, Detail: "event has no payload"}
	}
	c.nonEmpty("session", e.Session)
	if e.Seq < 1 {
		c.fail("seq", ErrMalformed, "got %d, want a number >= 1", e.Seq)
	}
	if e.TS.IsZero() {
		c.fail("ts", ErrMissingField, "want an RFC 3339 time in UTC")
	}
	if e.Turn < 0 {
		c.fail("turn", ErrMalformed, "got %d, want a number >= 0", e.Turn)
	}
	e.Payload.validate(c)
	return c.err
}

func versionDetail(v int) string {
	if v == 0 {
		return "missing or 0; this build reads v 1 and v 2"
	}
	if v > Version {
		return "got " + strconv.Itoa(v) + "; this build reads v 1 and v 2 (upgrade retrace to read newer files)"
	}
	return "got " + strconv.Itoa(v) + "; this build reads v 1 and v 2"
}

// Hash returns the contract's short content hash of b: the first 8 bytes of
// its SHA-256, as 16 lower-case hex digits. Requests, tool definitions and
// messages are compared by these hashes.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// IsHash reports whether s has the form Hash returns.
func IsHash(s string) bool {
	return len(s) == 16 && isHexRun(s)
}

// BlobRef returns the reference of a blob with content b in a run's
// content-addressed blob store: "sha256:" and the full hex digest.
func BlobRef(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// IsBlobRef reports whether s has the form BlobRef returns.
func IsBlobRef(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	return isHexRun(s[len(prefix):])
}

func isHexRun(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' }

const labelRule = "1 to 64 of A-Z a-z 0-9 _ . : -, starting with a letter or digit"

// IsLabel reports whether s may be used as a label: a short token from a
// bounded set such as an error code ("ENOENT", "exit:2") or a reminder kind.
// Paths, commands and messages never pass, because of the slash, space or
// length.
func IsLabel(s string) bool {
	if len(s) == 0 || len(s) > 64 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		b := s[i]
		if !isAlnum(b) && b != '_' && b != '.' && b != ':' && b != '-' {
			return false
		}
	}
	return true
}

// IsToolName reports whether s is a valid tool name for both provider
// families: ^[a-zA-Z0-9_-]{1,64}$.
func IsToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !isAlnum(b) && b != '_' && b != '-' {
			return false
		}
	}
	return true
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// Millis converts a duration to the contract's unit for every *_ms field:
// milliseconds with microsecond precision, so fast tools do not all read 0.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
