package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The types below are the OTLP/JSON encoding of a trace request
// (opentelemetry-proto's TracesData): field names in lowerCamelCase, trace
// and span ids as hex strings, 64-bit integers as decimal strings. They
// are what --otlp-file writes and Import reads; the protobuf request sent
// over HTTP is built from them.

// TracesData is one OTLP/JSON trace document.
type TracesData struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans are the spans of one resource (here: one session).
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
	SchemaURL  string       `json:"schemaUrl,omitempty"`
}

// Resource describes what emitted the spans.
type Resource struct {
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// ScopeSpans are the spans of one instrumentation scope.
type ScopeSpans struct {
	Scope     Scope  `json:"scope"`
	Spans     []Span `json:"spans"`
	SchemaURL string `json:"schemaUrl,omitempty"`
}

// Scope names the instrumentation that made the spans.
type Scope struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// Span kinds, as OTLP numbers them.
const (
	KindInternal = 1
	KindClient   = 3
)

// Status codes, as OTLP numbers them.
const (
	StatusUnset = 0
	StatusOK    = 1
	StatusError = 2
)

// Span is one OTLP span.
type Span struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	ParentSpanID      string      `json:"parentSpanId,omitempty"`
	Name              string      `json:"name"`
	Kind              int         `json:"kind,omitempty"`
	StartTimeUnixNano Uint64      `json:"startTimeUnixNano"`
	EndTimeUnixNano   Uint64      `json:"endTimeUnixNano"`
	Attributes        []KeyValue  `json:"attributes,omitempty"`
	Events            []SpanEvent `json:"events,omitempty"`
	Status            *Status     `json:"status,omitempty"`
}

// SpanEvent is a timestamped event inside a span.
type SpanEvent struct {
	TimeUnixNano Uint64     `json:"timeUnixNano"`
	Name         string     `json:"name"`
	Attributes   []KeyValue `json:"attributes,omitempty"`
}

// Status is a span's outcome.
type Status struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// KeyValue is one attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute value; exactly one field is set.
type AnyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *Int64      `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
}

// ArrayValue is a list attribute value.
type ArrayValue struct {
	Values []AnyValue `json:"values"`
}

// Uint64 is an unsigned 64-bit number that OTLP/JSON writes as a decimal
// string; it also reads a plain JSON number, as OTLP receivers do.
type Uint64 uint64

// MarshalJSON writes the number as a decimal string.
func (u Uint64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(u), 10) + `"`), nil
}

// UnmarshalJSON reads a decimal string or a JSON number.
func (u *Uint64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want unsigned decimal nanoseconds, got %s", clipJSON(b))
	}
	*u = Uint64(n)
	return nil
}

// Int64 is a signed 64-bit number that OTLP/JSON writes as a decimal
// string; it also reads a plain JSON number.
type Int64 int64

// MarshalJSON writes the number as a decimal string.
func (i Int64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(i), 10) + `"`), nil
}

// UnmarshalJSON reads a decimal string or a JSON number.
func (i *Int64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want a decimal integer, got %s", clipJSON(b))
	}
	*i = Int64(n)
	return nil
}

func clipJSON(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// Attribute constructors, for building spans.

func strAttr(k, v string) KeyValue { return KeyValue{Key: k, Value: AnyValue{StringValue: &v}} }

func intAttr(k string, v int64) KeyValue {
	i := Int64(v)
	return KeyValue{Key: k, Value: AnyValue{IntValue: &i}}
}

func boolAttr(k string, v bool) KeyValue { return KeyValue{Key: k, Value: AnyValue{BoolValue: &v}} }

func floatAttr(k string, v float64) KeyValue {
	return KeyValue{Key: k, Value: AnyValue{DoubleValue: &v}}
}

func strsAttr(k string, vs ...string) KeyValue {
	arr := &ArrayValue{Values: make([]AnyValue, len(vs))}
	for i := range vs {
		arr.Values[i] = AnyValue{StringValue: &vs[i]}
	}
	return KeyValue{Key: k, Value: AnyValue{ArrayValue: arr}}
}

// attrs indexes a span's attributes by key for reading.
type attrs map[string]AnyValue

func attrMap(kvs []KeyValue) attrs {
	m := make(attrs, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// str returns a string attribute, or "" when it is absent or no string.
func (a attrs) str(k string) string {
	if v, ok := a[k]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

// int returns an integer attribute (an integer-valued double or a decimal
// string too, which some SDKs write), and whether there was one.
func (a attrs) int(k string) (int64, bool) {
	v, ok := a[k]
	switch {
	case !ok:
		return 0, false
	case v.IntValue != nil:
		return int64(*v.IntValue), true
	case v.DoubleValue != nil && *v.DoubleValue == float64(int64(*v.DoubleValue)):
		return int64(*v.DoubleValue), true
	case v.StringValue != nil:
		n, err := strconv.ParseInt(*v.StringValue, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// float returns a number attribute and whether there was one.
func (a attrs) float(k string) (float64, bool) {
	v, ok := a[k]
	switch {
	case !ok:
		return 0, false
	case v.DoubleValue != nil:
		return *v.DoubleValue, true
	case v.IntValue != nil:
		return float64(*v.IntValue), true
	}
	return 0, false
}

// bool returns a boolean attribute, false when absent.
func (a attrs) bool(k string) bool {
	v, ok := a[k]
	return ok && v.BoolValue != nil && *v.BoolValue
}

// strs returns a string-list attribute; a single string reads as a list of one.
func (a attrs) strs(k string) []string {
	v, ok := a[k]
	switch {
	case !ok:
		return nil
	case v.StringValue != nil:
		return []string{*v.StringValue}
	case v.ArrayValue != nil:
		var out []string
		for _, e := range v.ArrayValue.Values {
			if e.StringValue != nil {
				out = append(out, *e.StringValue)
			}
		}
		return out
	}
	return nil
}

// Encode writes td as one line of OTLP/JSON.
func (td *TracesData) Encode() ([]byte, error) {
	return json.Marshal(td)
}
