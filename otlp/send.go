package otlp

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrRejected is wrapped by the error of a receiver that answered an
// export with a status other than 2xx, or that rejected spans.
var ErrRejected = errors.New("the OTLP receiver rejected the export")

// ErrBadEndpoint is wrapped by TracesURL's error for a URL that is not
// http(s)://host[:port][/path].
var ErrBadEndpoint = errors.New("bad OTLP endpoint")

// TracesURL returns the URL traces are posted to: endpoint as given when
// it has a path, else endpoint + /v1/traces, as the OTLP exporters treat
// OTEL_EXPORTER_OTLP_ENDPOINT.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w %q: want http(s)://host:port, e.g. http://localhost:4318", ErrBadEndpoint, endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// HTTPSender posts batches of traces to an OTLP/HTTP receiver as protobuf.
type HTTPSender struct {
	// URL is the full traces URL (see TracesURL).
	URL string
	// Headers are sent with every request (authorisation); they are never
	// written to an error or a log.
	Headers map[string]string
	// Client is the HTTP client; nil means one with a 30 s timeout.
	Client *http.Client
	// Retries is how many times a request that failed with 429, 502, 503,
	// 504 or a connection error is tried again, after 0.2 s, 0.4 s, ...
	Retries int
}

// Send posts one batch and returns the number of spans the receiver
// accepted (all unless it reports a partial success).
func (s *HTTPSender) Send(ctx context.Context, batch []ResourceSpans) (int, error) {
	req, spans, err := ToProto(batch)
	if err != nil {
		return 0, err
	}
	body, err := proto.Marshal(req)
	if err != nil {
		return 0, err
	}
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	var lastErr error
	for attempt := 0; attempt <= s.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
			}
		}
		accepted, retry, err := s.post(ctx, client, body, spans)
		if err == nil || !retry {
			return accepted, err
		}
		lastErr = err
	}
	return 0, lastErr
}

func (s *HTTPSender) post(ctx context.Context, client *http.Client, body []byte, spans int) (accepted int, retry bool, err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	for k, v := range s.Headers {
		hr.Header.Set(k, v)
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		// The error names the URL, never the headers.
		return 0, true, fmt.Errorf("post traces to %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 0, true, fmt.Errorf("%w: %s answered %s", ErrRejected, s.URL, resp.Status)
	default:
		return 0, false, fmt.Errorf("%w: %s answered %s: %s", ErrRejected, s.URL, resp.Status, clipText(rb))
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "protobuf") {
		if rejected, msg := partialSuccess(rb); rejected > 0 {
			return spans - int(rejected), false, fmt.Errorf("%w: %d of %d spans: %s", ErrRejected, rejected, spans, clipText([]byte(msg)))
		}
	}
	return spans, false, nil
}

// partialSuccess reads ExportTraceServiceResponse.partial_success
// (field 1: rejected_spans = 1, error_message = 2) straight off the wire,
// so that this package needs the trace types only and not the gRPC
// service package; a body it cannot read counts as full success, as the
// OTLP specification has a client treat an empty response.
func partialSuccess(b []byte) (rejected int64, msg string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, ""
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			inner, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, ""
			}
			b = b[n:]
			for len(inner) > 0 {
				f, t, m := protowire.ConsumeTag(inner)
				if m < 0 {
					return rejected, msg
				}
				inner = inner[m:]
				switch {
				case f == 1 && t == protowire.VarintType:
					v, m := protowire.ConsumeVarint(inner)
					if m < 0 {
						return rejected, msg
					}
					rejected, inner = int64(v), inner[m:]
				case f == 2 && t == protowire.BytesType:
					v, m := protowire.ConsumeBytes(inner)
					if m < 0 {
						return rejected, msg
					}
					msg, inner = string(v), inner[m:]
				default:
					m := protowire.ConsumeFieldValue(f, t, inner)
					if m < 0 {
						return rejected, msg
					}
					inner = inner[m:]
				}
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, ""
		}
		b = b[m:]
	}
	return rejected, msg
}

func clipText(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// ToProto converts OTLP/JSON resource spans to protobuf and counts the
// spans. TracesData has the wire form of the collector's
// ExportTraceServiceRequest (both are field 1, repeated ResourceSpans),
// so its bytes are the body an OTLP/HTTP receiver decodes.
func ToProto(batch []ResourceSpans) (*tracepb.TracesData, int, error) {
	req := &tracepb.TracesData{ResourceSpans: make([]*tracepb.ResourceSpans, 0, len(batch))}
	n := 0
	for i := range batch {
		rs := &batch[i]
		prs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: protoAttrs(rs.Resource.Attributes)}, SchemaUrl: rs.SchemaURL}
		for j := range rs.ScopeSpans {
			ss := &rs.ScopeSpans[j]
			pss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ss.Scope.Name, Version: ss.Scope.Version},
				SchemaUrl: ss.SchemaURL, Spans: make([]*tracepb.Span, 0, len(ss.Spans))}
			for k := range ss.Spans {
				ps, err := protoSpan(&ss.Spans[k])
				if err != nil {
					return nil, 0, fmt.Errorf("resourceSpans[%d].scopeSpans[%d].spans[%d]: %w", i, j, k, err)
				}
				pss.Spans = append(pss.Spans, ps)
				n++
			}
			prs.ScopeSpans = append(prs.ScopeSpans, pss)
		}
		req.ResourceSpans = append(req.ResourceSpans, prs)
	}
	return req, n, nil
}

func protoSpan(s *Span) (*tracepb.Span, error) {
	tid, err := decodeID(s.TraceID, 16)
	if err != nil {
		return nil, fmt.Errorf("traceId: %w", err)
	}
	sid, err := decodeID(s.SpanID, 8)
	if err != nil {
		return nil, fmt.Errorf("spanId: %w", err)
	}
	var pid []byte
	if s.ParentSpanID != "" {
		if pid, err = decodeID(s.ParentSpanID, 8); err != nil {
			return nil, fmt.Errorf("parentSpanId: %w", err)
		}
	}
	ps := &tracepb.Span{TraceId: tid, SpanId: sid, ParentSpanId: pid, Name: s.Name, Kind: tracepb.Span_SpanKind(s.Kind),
		StartTimeUnixNano: uint64(s.StartTimeUnixNano), EndTimeUnixNano: uint64(s.EndTimeUnixNano), Attributes: protoAttrs(s.Attributes)}
	for _, e := range s.Events {
		ps.Events = append(ps.Events, &tracepb.Span_Event{TimeUnixNano: uint64(e.TimeUnixNano), Name: e.Name, Attributes: protoAttrs(e.Attributes)})
	}
	if s.Status != nil {
		ps.Status = &tracepb.Status{Code: tracepb.Status_StatusCode(s.Status.Code), Message: s.Status.Message}
	}
	return ps, nil
}

// decodeID reads a hex trace (16 bytes) or span (8 bytes) id.
func decodeID(s string, n int) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("want %d hex digits, got %q", 2*n, clipText([]byte(s)))
	}
	return b, nil
}

func protoAttrs(kvs []KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: kv.Key, Value: protoValue(kv.Value)})
	}
	return out
}

func protoValue(v AnyValue) *commonpb.AnyValue {
	switch {
	case v.StringValue != nil:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: *v.StringValue}}
	case v.BoolValue != nil:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: *v.BoolValue}}
	case v.IntValue != nil:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(*v.IntValue)}}
	case v.DoubleValue != nil:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: *v.DoubleValue}}
	case v.ArrayValue != nil:
		arr := &commonpb.ArrayValue{}
		for _, e := range v.ArrayValue.Values {
			arr.Values = append(arr.Values, protoValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	}
	return &commonpb.AnyValue{}
}
