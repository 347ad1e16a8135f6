package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrMalformed is wrapped by the *PathError of input that is not OTLP/JSON.
var ErrMalformed = errors.New("malformed OTLP/JSON")

// PathError names where in an OTLP/JSON file a problem is: the file, the
// line the offending value starts on, and its JSON path.
type PathError struct {
	File string
	Line int
	// Path is the JSON path, e.g. resourceSpans[0].scopeSpans[1].spans[3].spanId.
	Path   string
	Err    error
	Detail string
}

func (e *PathError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Path != "" {
		loc += ": " + e.Path
	}
	return fmt.Sprintf("%s: %v: %s", loc, e.Err, e.Detail)
}

// Unwrap returns the sentinel.
func (e *PathError) Unwrap() error { return e.Err }

// maxDocument bounds one OTLP/JSON document, so that a huge or endless
// input fails with an error instead of exhausting memory.
const maxDocument = 256 << 20

// The raw forms keep each list element's bytes, so that an error names its
// index and line.
type rawTraces struct {
	ResourceSpans []json.RawMessage `json:"resourceSpans"`
}

type rawResourceSpans struct {
	Resource   rawResource       `json:"resource"`
	ScopeSpans []json.RawMessage `json:"scopeSpans"`
}

type rawResource struct {
	Attributes []KeyValue `json:"attributes"`
}

type rawScopeSpans struct {
	Scope Scope             `json:"scope"`
	Spans []json.RawMessage `json:"spans"`
}

// rawSpan is a span as read: kinds and status codes may be numbers or the
// enum names some encoders write, ids hex (the OTLP/JSON rule) or base64
// (protobuf's default JSON mapping).
type rawSpan struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	ParentSpanID      string      `json:"parentSpanId"`
	Name              string      `json:"name"`
	Kind              enumNum     `json:"kind"`
	StartTimeUnixNano Uint64      `json:"startTimeUnixNano"`
	EndTimeUnixNano   Uint64      `json:"endTimeUnixNano"`
	Attributes        []KeyValue  `json:"attributes"`
	Events            []SpanEvent `json:"events"`
	Status            *rawStatus  `json:"status"`
}

type rawStatus struct {
	Code    enumNum `json:"code"`
	Message string  `json:"message"`
}

// enumNum is an OTLP enum: a number, or its name as a string.
type enumNum int

var enumNames = map[string]int{
	"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
	"SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
	"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
}

func (e *enumNum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n, ok := enumNames[s]
		if !ok {
			return fmt.Errorf("unknown enum value %q", clipText([]byte(s)))
		}
		*e = enumNum(n)
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("want an enum number or name, got %s", clipJSON(b))
	}
	*e = enumNum(n)
	return nil
}

// decodedSpan is a span with its resource's attributes and where it was read.
type decodedSpan struct {
	Span
	res  attrs
	file string
	line int
	path string
}

// readSpans decodes every OTLP/JSON document in r (one TracesData, or one
// per line) and returns the spans in input order.
func readSpans(r io.Reader, file string) ([]decodedSpan, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > maxDocument {
		return nil, &PathError{File: file, Err: ErrMalformed, Detail: fmt.Sprintf("larger than %d MiB; split it", maxDocument>>20)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []decodedSpan
	docs := 0
	for {
		start := int(dec.InputOffset())
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, jsonError(file, data, start, "", err)
		}
		// The raw document is a copy; find where it starts for line numbers.
		for start < len(data) && isSpace(data[start]) {
			start++
		}
		docs++
		spans, err := decodeDoc(file, data, start, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, spans...)
	}
	if docs == 0 {
		return nil, &PathError{File: file, Line: 1, Err: ErrMalformed, Detail: "empty: want an OTLP/JSON object {\"resourceSpans\": [...]}"}
	}
	return out, nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func decodeDoc(file string, data []byte, docStart int, doc []byte) ([]decodedSpan, error) {
	if len(doc) == 0 || doc[0] != '{' {
		return nil, &PathError{File: file, Line: lineAt(data, docStart), Err: ErrMalformed, Detail: "want an OTLP/JSON object {\"resourceSpans\": [...]}"}
	}
	var td rawTraces
	if err := json.Unmarshal(doc, &td); err != nil {
		return nil, jsonError(file, data, docStart, "", err)
	}
	var out []decodedSpan
	// off tracks where the next element is searched for in doc, so equal
	// elements get their own lines.
	off := 0
	locate := func(raw []byte) int {
		if i := bytes.Index(doc[off:], raw); i >= 0 {
			off += i
			return docStart + off
		}
		return docStart
	}
	for i, rawRS := range td.ResourceSpans {
		path := fmt.Sprintf("resourceSpans[%d]", i)
		at := locate(rawRS)
		var rs rawResourceSpans
		if err := json.Unmarshal(rawRS, &rs); err != nil {
			return nil, jsonError(file, data, at, path, err)
		}
		res := attrMap(rs.Resource.Attributes)
		for j, rawSS := range rs.ScopeSpans {
			spath := fmt.Sprintf("%s.scopeSpans[%d]", path, j)
			at := locate(rawSS)
			var ss rawScopeSpans
			if err := json.Unmarshal(rawSS, &ss); err != nil {
				return nil, jsonError(file, data, at, spath, err)
			}
			for k, raw := range ss.Spans {
				kpath := fmt.Sprintf("%s.spans[%d]", spath, k)
				at := locate(raw)
				var rsp rawSpan
				if err := json.Unmarshal(raw, &rsp); err != nil {
					return nil, jsonError(file, data, at, kpath, err)
				}
				s, field, err := rsp.span()
				if err != nil {
					return nil, &PathError{File: file, Line: lineAt(data, at), Path: kpath + "." + field, Err: ErrMalformed, Detail: err.Error()}
				}
				out = append(out, decodedSpan{Span: s, res: res, file: file, line: lineAt(data, at), path: kpath})
			}
		}
	}
	return out, nil
}

// span checks the raw span's ids and times and normalises ids to hex.
func (r *rawSpan) span() (Span, string, error) {
	tid, err := normID(r.TraceID, 16)
	if err != nil {
		return Span{}, "traceId", err
	}
	sid, err := normID(r.SpanID, 8)
	if err != nil {
		return Span{}, "spanId", err
	}
	var pid string
	if r.ParentSpanID != "" {
		if pid, err = normID(r.ParentSpanID, 8); err != nil {
			return Span{}, "parentSpanId", err
		}
	}
	if r.EndTimeUnixNano < r.StartTimeUnixNano {
		return Span{}, "endTimeUnixNano", fmt.Errorf("ends (%d) before it starts (%d)", r.EndTimeUnixNano, r.StartTimeUnixNano)
	}
	if r.EndTimeUnixNano > math.MaxInt64 {
		// Go's time (and the contract's RFC 3339) ends in the year 2262.
		return Span{}, "endTimeUnixNano", fmt.Errorf("%d is past the year 2262; want nanoseconds since 1970", r.EndTimeUnixNano)
	}
	if r.StartTimeUnixNano == 0 {
		return Span{}, "startTimeUnixNano", errors.New("missing or 0; want the span's start in nanoseconds since 1970")
	}
	s := Span{TraceID: tid, SpanID: sid, ParentSpanID: pid, Name: r.Name, Kind: int(r.Kind),
		StartTimeUnixNano: r.StartTimeUnixNano, EndTimeUnixNano: r.EndTimeUnixNano, Attributes: r.Attributes, Events: r.Events}
	if r.Status != nil {
		s.Status = &Status{Code: int(r.Status.Code), Message: r.Status.Message}
	}
	return s, "", nil
}

// normID returns an id as lower-case hex: OTLP/JSON writes hex, protobuf's
// default JSON mapping base64; an all-zero id is invalid.
func normID(s string, n int) (string, error) {
	if len(s) == 2*n {
		if b, err := hex.DecodeString(s); err == nil {
			if isZero(b) {
				return "", errors.New("all zero, which OTLP forbids")
			}
			return strings.ToLower(s), nil
		}
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == n && !isZero(b) {
		return hex.EncodeToString(b), nil
	}
	if s == "" {
		return "", fmt.Errorf("missing; want %d hex digits", 2*n)
	}
	return "", fmt.Errorf("want %d hex digits, got %q", 2*n, clipText([]byte(s)))
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// jsonError turns an encoding/json error into a *PathError with the line
// and path of the offending value.
func jsonError(file string, data []byte, base int, path string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	pe := &PathError{File: file, Line: lineAt(data, base), Path: path, Err: ErrMalformed}
	switch {
	case errors.As(err, &se):
		pe.Line = lineAt(data, base+int(se.Offset))
		pe.Detail = "not JSON: " + se.Error()
	case errors.As(err, &te):
		pe.Line = lineAt(data, base+int(te.Offset))
		if te.Field != "" {
			pe.Path = joinPath(path, te.Field)
		}
		pe.Detail = fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	default:
		pe.Detail = err.Error()
	}
	return pe
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
