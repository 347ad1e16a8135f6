package trajectory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every error the reader returns wraps one of them, so callers
// can branch with errors.Is while the message still says file, line and field.
var (
	// ErrMalformed means a line is not a well-formed event: bad JSON, a
	// missing or unknown field, or a value of the wrong shape.
	ErrMalformed = errors.New("malformed event")
	// ErrUnsupportedVersion means the event's "v" is not a version this build reads.
	ErrUnsupportedVersion = errors.New("unsupported trajectory version")
	// ErrUnknownValue means a closed-set field holds a value outside its set.
	ErrUnknownValue = errors.New("unknown value")
	// ErrMissingField means a required field is absent.
	ErrMissingField = errors.New("missing required field")
	// ErrBinary means the input holds binary data and is not a JSONL trajectory.
	ErrBinary = errors.New("binary data, not a JSONL trajectory")
	// ErrLineTooLong means a line is longer than the decoder's limit.
	ErrLineTooLong = errors.New("line too long")
	// ErrNoRuns means a path named no trajectory files at all.
	ErrNoRuns = errors.New("no trajectory files")
)

// LineError locates a problem at a line of a file. Its message is
// "file:line: reason", the form editors and CI annotations understand.
type LineError struct {
	File string
	Line int
	Err  error
}

// Error implements error.
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error, so errors.Is sees the sentinel.
func (e *LineError) Unwrap() error { return e.Err }

// FieldError names the field of an event that is wrong and why.
type FieldError struct {
	Field string
	Err   error
	// Detail says what was found and what is expected instead.
	Detail string
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("field %q: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("field %q: %v: %s", e.Field, e.Err, e.Detail)
}

// Unwrap returns the sentinel the field error wraps.
func (e *FieldError) Unwrap() error { return e.Err }

// checks gathers the first problem found while validating a payload, so
// validation code reads as a flat list of rules.
type checks struct {
	err error
	// v is the version of the event being checked: a few rules differ
	// between versions.
	v int
}

func (c *checks) fail(field string, sentinel error, format string, args ...any) {
	if c.err == nil {
		c.err = &FieldError{Field: field, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
	}
}

func (c *checks) nonEmpty(field, v string) {
	if v == "" {
		c.fail(field, ErrMissingField, "must not be empty")
	}
}

func (c *checks) nonNegative(field string, v float64) {
	if v < 0 {
		c.fail(field, ErrMalformed, "got %v, want a number >= 0", v)
	}
}

func (c *checks) label(field, v string) {
	if !IsLabel(v) {
		c.fail(field, ErrMalformed, "got %q, want a label (%s): never a path, command or message", v, labelRule)
	}
}

func (c *checks) optionalLabel(field, v string) {
	if v != "" {
		c.label(field, v)
	}
}

func (c *checks) toolName(field, v string) {
	if !IsToolName(v) {
		c.fail(field, ErrMalformed, "got %q, want a tool name matching ^[a-zA-Z0-9_-]{1,64}$", v)
	}
}

func (c *checks) hash(field, v string) {
	if !IsHash(v) {
		c.fail(field, ErrMalformed, "got %q, want 16 lower-case hex digits (see trajectory.Hash)", v)
	}
}

func (c *checks) blobRef(field, v string) {
	if v != "" && !IsBlobRef(v) {
		c.fail(field, ErrMalformed, "got %q, want sha256:<64 hex digits>", v)
	}
}

func checkEnum[T ~string](c *checks, field string, v T, set closedSet[T]) {
	if v == "" {
		c.fail(field, ErrMissingField, "want one of %s", strings.Join(set.strings(), ", "))
		return
	}
	if !set.has(v) {
		c.fail(field, ErrUnknownValue, "got %q, want one of %s", string(v), strings.Join(set.strings(), ", "))
	}
}

// nested runs the checks of a sub-object and, on failure, prefixes the
// failing field with the sub-object's name. The name is only built on
// failure, and the sub-object's checks record into c itself (which holds
// no error yet), so validating a valid event allocates nothing.
func (c *checks) nested(prefix string, f func(*checks)) {
	if c.err != nil {
		return
	}
	f(c)
	if fe, ok := c.err.(*FieldError); ok {
		fe.Field = prefix + fe.Field
	}
}

func (c *checks) nestedAt(list string, i int, f func(*checks)) {
	if c.err != nil {
		return
	}
	f(c)
	if fe, ok := c.err.(*FieldError); ok {
		fe.Field = indexed(list, i) + "." + fe.Field
	}
}

func indexed(list string, i int) string { return list + "[" + strconv.Itoa(i) + "]" }
