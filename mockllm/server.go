package mockllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/llm"
)

// DefaultMaxBodyBytes is the request body cap when Options sets none; the
// real APIs refuse larger bodies with 413 as well.
const DefaultMaxBodyBytes = 32 << 20

// The timeouts when Options sets none. They are generous for an agent on
// loopback and still cut a client that holds a connection doing nothing.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// DefaultKeepRequests is how many of the latest requests Requests returns
// when Options sets no number.
const DefaultKeepRequests = 32

// The endpoints a Logged request names.
const (
	EndpointMessages        = "anthropic.messages"
	EndpointCountTokens     = "anthropic.count_tokens"
	EndpointChatCompletions = "openai.chat_completions"
	EndpointResponses       = "openai.responses"
	EndpointModels          = "models"
	// EndpointHello is Claude Code's reachability check (HEAD /api/hello),
	// answered 200 with no body so that it goes on as against the API.
	EndpointHello   = "anthropic.hello"
	EndpointUnknown = "unknown"
)

// Options tune a Server. The zero value is ready to use. The hooks (the
// On fields) are called from the request's or the connection's goroutine,
// so they must be safe for concurrent use.
type Options struct {
	// MaxBodyBytes caps request bodies (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// ReadHeaderTimeout is how long a client has to send a request's
	// headers, from the moment it connects or starts the request
	// (DefaultReadHeaderTimeout when 0).
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client has to send a whole request,
	// headers and body (DefaultReadTimeout when 0). The reply is not
	// limited: net/http lifts the read deadline once the body is read, so
	// a stalled stream may last longer.
	ReadTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request (DefaultIdleTimeout when 0).
	IdleTimeout time.Duration
	// KeepRequests is how many of the latest requests Requests returns
	// (DefaultKeepRequests when 0, none when negative). The server keeps
	// no other history, so its memory stays flat however long it serves.
	KeepRequests int
	// OnAccept is called when a model call has been decoded and the
	// source has chosen its reply, before the first byte of the reply is
	// sent: Status is 200 with Response set, or the injected fault's
	// status. It is the hook for recording a request as it arrives. When
	// it returns an error (the recording cannot be written), the chosen
	// reply is not served: the client gets HTTP 500 with x-should-retry:
	// false and the error's text, since a reply that is not recorded must
	// not be served.
	OnAccept func(Logged) error
	// OnAnswer is called when a model call's 200 reply is complete, just
	// before its last bytes (the final SSE frame, the JSON body) are sent,
	// so that whatever a client received is already recorded. A reply cut
	// short (the client left, an injected malformed frame) gets no call.
	// When it returns an error the reply is not completed: a JSON reply
	// becomes HTTP 500 with the error's text, a stream ends without its
	// last frame, which a client reads as a broken stream.
	OnAnswer func(Logged) error
	// OnRequest is called after each request has been answered. It is the
	// hook for logging lines.
	OnRequest func(Logged)
	// OnCut is called when the server cuts a connection because a client
	// was too slow or idle for one of the timeouts.
	OnCut func(Cut)
	// Now is the clock for timestamps (time.Now when nil).
	Now func() time.Time
}

// Logged is one request the server received, as an agent sent it.
type Logged struct {
	// ID numbers the requests of a Server from 1, so that the hooks
	// called for one request (OnAccept, OnAnswer, OnRequest) can be told
	// from those of another sent at the same time.
	ID       uint64
	Time     time.Time
	Endpoint string
	Method   string
	// Path includes the query string.
	Path string
	// Header is the subset of headers worth asserting on; credentials
	// (x-api-key, authorization) are never kept.
	Header http.Header
	// Body is the request body as received. The copies Requests returns
	// have none, to bound what the server keeps.
	Body []byte
	// BodyBytes is the size of the body.
	BodyBytes int
	// Request is the decoded provider-neutral request, nil when the body
	// did not decode.
	Request *llm.Request
	Stream  bool
	// Status is the HTTP status answered.
	Status int
	// Turn is the script turn that answered (0 when none did), counted
	// within its conversation.
	Turn int
	// Conversation names the conversation that answered, when the source
	// routes (see Reply.Conversation).
	Conversation string
	// Error is the error message sent, when Status is not 200.
	Error string
	// Response is the reply sent, when Status is 200 on a model endpoint.
	Response *llm.Response
	// Accepted is set once OnAccept has been called: the source chose the
	// reply (a response or an injected status). A model call answered with
	// an error status and not Accepted was refused before the source
	// answered (invalid, out of turns, a failed expectation).
	Accepted bool
	// Complete is set once OnAnswer has been called: the whole 200 reply
	// was about to be sent. A 200 model call that is not Complete sent a
	// broken reply (malformed_sse) or lost its client on the way.
	Complete bool
	// FirstByte is when the reply's first bytes were written (zero before).
	FirstByte time.Time
	// End is when the reply was complete (OnAnswer), when an injected
	// error status was about to be sent (OnAccept) or, for any other
	// request, when the handler finished.
	End time.Time
	// ClientGone is set when the client hung up before the handler
	// finished, so it did not get the whole reply.
	ClientGone bool
}

// Stats counts what a Server has served.
type Stats struct {
	// Requests is every request answered, Answered the model calls
	// answered with 200, Failed the requests answered with an error status.
	Requests, Answered, Failed int64
	// Cut counts connections cut by a timeout.
	Cut int64
}

// TimeoutKind names the timeout that cut a connection.
type TimeoutKind string

// The timeouts of Options.
const (
	TimeoutReadHeader TimeoutKind = "read-header"
	TimeoutRead       TimeoutKind = "read"
	TimeoutIdle       TimeoutKind = "idle"
)

// Cut is a connection the server closed because its client was too slow
// or idle.
type Cut struct {
	Time time.Time
	// Client is the client's address.
	Client  string
	Timeout TimeoutKind
	// After is the timeout that ran out.
	After time.Duration
	// Received is how many bytes of the unfinished request had arrived
	// (of its body, for TimeoutRead).
	Received int64
}

// String describes the cut as a log line.
func (c Cut) String() string {
	switch {
	case c.Timeout == TimeoutIdle:
		return fmt.Sprintf("cut idle client %s after %s: no new request on its connection (idle timeout)", c.Client, c.After)
	case c.Timeout == TimeoutRead:
		return fmt.Sprintf("cut client %s after %s: its request body was still incomplete, %d bytes received (read timeout)", c.Client, c.After, c.Received)
	case c.Received == 0:
		return fmt.Sprintf("cut client %s after %s: it connected and sent nothing (read-header timeout)", c.Client, c.After)
	}
	return fmt.Sprintf("cut client %s after %s: its request headers were still incomplete, %d bytes received (read-header timeout)", c.Client, c.After, c.Received)
}

// loggedHeaders are the request headers a Logged keeps.
var loggedHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "User-Agent",
	"X-Stainless-Retry-Count", "X-Stainless-Lang", "X-Stainless-Timeout", "Openai-Beta", "Idempotency-Key", ConversationHeader}

// Server is a mock model API over HTTP: Anthropic Messages, OpenAI Chat
// Completions and OpenAI Responses, each in JSON and SSE, answered from a
// Source. It validates requests the way the real APIs do and injects the
// source's faults. It prints nothing; see the hooks of Options. It keeps
// counters and the latest few requests, never the whole history.
type Server struct {
	src  Source
	opts Options
	ids  atomic.Uint64
	// exchanges numbers the requests (Logged.ID).
	exchanges atomic.Uint64

	requests, answered, failed, cut atomic.Int64

	mu   sync.Mutex
	ring []Logged // the latest KeepRequests requests, oldest at next
	next int

	srvMu sync.Mutex
	srv   *http.Server
	url   string
}

// NewServer returns a Server answering from src.
func NewServer(src Source, opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.KeepRequests == 0 {
		opts.KeepRequests = DefaultKeepRequests
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{src: src, opts: opts}
}

// Start listens on addr (such as 127.0.0.1:0) and serves in the
// background. It returns the base URL, e.g. http://127.0.0.1:43567; the
// OpenAI SDKs want that URL with /v1 appended.
func (s *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("mock LLM server: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: s.opts.ReadHeaderTimeout, ReadTimeout: s.opts.ReadTimeout,
		IdleTimeout: s.opts.IdleTimeout, ConnState: trackState, ConnContext: withConn,
		// Connection-level errors are reported through OnCut; the rest
		// (a client hanging up) is noise for a mock.
		ErrorLog: log.New(io.Discard, "", 0)}
	s.srvMu.Lock()
	s.srv, s.url = srv, "http://"+ln.Addr().String()
	s.srvMu.Unlock()
	go func() { _ = srv.Serve(&trackingListener{Listener: ln, s: s}) }()
	return s.url, nil
}

// URL returns the base URL after Start ("" before).
func (s *Server) URL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.url
}

// Close stops a started server and closes its connections, which cancels
// the requests in flight (a stalled stream ends at once).
func (s *Server) Close() error {
	s.srvMu.Lock()
	srv := s.srv
	s.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Requests returns the latest requests received (at most
// Options.KeepRequests), in order of completion, without their bodies.
func (s *Server) Requests() []Logged {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Logged, 0, len(s.ring))
	out = append(out, s.ring[s.next:]...)
	return append(out, s.ring[:s.next]...)
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Answered: s.answered.Load(), Failed: s.failed.Load(), Cut: s.cut.Load()}
}

// keep adds lg to the ring of latest requests.
func (s *Server) keep(lg Logged) {
	n := s.opts.KeepRequests
	if n < 0 {
		return
	}
	lg.Body = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) < n {
		s.ring = append(s.ring, lg)
		return
	}
	s.ring[s.next] = lg
	s.next = (s.next + 1) % n
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lg := Logged{ID: s.exchanges.Add(1), Time: s.opts.Now(), Method: r.Method, Path: loggedPath(r), Header: http.Header{}}
	for _, h := range loggedHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			lg.Header[h] = v
		}
	}
	x := &exchange{s: s, w: w, r: r, lg: &lg}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/v1/messages":
		lg.Endpoint = EndpointMessages
		x.dialect = anthropicDialect{}
		x.handleModelCall()
	case path == "/v1/messages/count_tokens":
		lg.Endpoint = EndpointCountTokens
		x.dialect = anthropicDialect{}
		x.handleCountTokens()
	case path == "/v1/chat/completions":
		lg.Endpoint = EndpointChatCompletions
		x.dialect = chatDialect{}
		x.handleModelCall()
	case path == "/v1/responses":
		lg.Endpoint = EndpointResponses
		x.dialect = responsesDialect{}
		x.handleModelCall()
	case path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"):
		lg.Endpoint = EndpointModels
		x.dialect = modelsDialectFor(r)
		x.handleModels(strings.TrimPrefix(strings.TrimPrefix(path, "/v1/models"), "/"))
	case path == "/api/hello" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		lg.Endpoint = EndpointHello
		lg.Status = http.StatusOK
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodConnect:
		// A client behind HTTPS_PROXY pointed at the mock tunnels through
		// it; the mock is no proxy, and the log names the host the client
		// wanted so that whoever reads it knows which traffic escaped the
		// base URL.
		lg.Endpoint = EndpointUnknown
		x.dialect = modelsDialectFor(r)
		x.fail(http.StatusMethodNotAllowed, errNotFound, fmt.Sprintf("CONNECT %s: this mock is not a proxy; point the client's base URL at the mock instead of routing it through HTTPS_PROXY", lg.Path), "")
	default:
		lg.Endpoint = EndpointUnknown
		x.dialect = modelsDialectFor(r)
		x.fail(http.StatusNotFound, errNotFound, fmt.Sprintf("%s %s is not an endpoint of this mock; it serves POST /v1/messages, /v1/messages/count_tokens, /v1/chat/completions, /v1/responses and GET /v1/models", r.Method, r.URL.Path), "")
	}
	if lg.End.IsZero() {
		lg.End = s.opts.Now()
	}
	lg.ClientGone = r.Context().Err() != nil
	s.requests.Add(1)
	switch {
	case lg.Status >= 400:
		s.failed.Add(1)
	case lg.Status == http.StatusOK && lg.Response != nil:
		s.answered.Add(1)
	}
	s.keep(lg)
	if s.opts.OnRequest != nil {
		s.opts.OnRequest(lg)
	}
}

// newID returns a unique id with the API's prefix for the kind of object.
func (s *Server) newID(prefix string) string {
	return prefix + "mock" + strconv.FormatUint(s.ids.Add(1)+0x1000000, 36)
}

// errKind is the class of an API error, which each dialect names its own way.
type errKind int

const (
	errInvalidRequest errKind = iota
	errNotFound
	errTooLarge
	errRateLimit
	errOverloaded
	errServer
	errAuth
)

// dialect is one wire protocol: how it decodes a request and writes a
// reply and an error.
type dialect interface {
	// decode parses and validates a body into the neutral request; the
	// error is an *apiError with the real API's message. The header
	// carries what widens the protocol (Anthropic's anthropic-beta).
	decode(body []byte, h http.Header) (req *llm.Request, stream bool, opts wireOptions, err *apiError)
	writeJSON(x *exchange, rep *Reply)
	writeSSE(x *exchange, rep *Reply, opts wireOptions)
	writeError(x *exchange, e *apiError)
	requestIDHeader() string
}

// wireOptions are request settings that shape the reply's wire form.
type wireOptions struct {
	includeUsage bool
}

// apiError is a rejected request, as the real API words it.
type apiError struct {
	status int
	kind   errKind
	msg    string
	// param names the offending field (OpenAI's error.param).
	param string
	code  string
}

func invalidf(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: errInvalidRequest, msg: fmt.Sprintf(format, args...), param: param}
}

// exchange is one request being answered.
type exchange struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	lg      *Logged
	dialect dialect
	// answered is set once OnAnswer has been called, unanswered when it
	// failed: the reply's end is then not sent.
	answered, unanswered bool
	answerErr            error
	// stream is the SSE writer of a streamed reply.
	stream *sse
}

// accept calls OnAccept: the source has chosen the reply. It reports
// whether to serve it; when not, the client got an error.
func (x *exchange) accept() bool {
	x.lg.Accepted = true
	if x.lg.Status != http.StatusOK {
		x.lg.End = x.s.opts.Now()
	}
	f := x.s.opts.OnAccept
	if f == nil {
		return true
	}
	if err := f(*x.lg); err != nil {
		x.lg.Response = nil
		x.unrecorded(err)
		return false
	}
	return true
}

// unrecorded answers a model call whose reply cannot be recorded.
func (x *exchange) unrecorded(err error) {
	x.w.Header().Set("X-Should-Retry", "false")
	x.fail(http.StatusInternalServerError, errServer, "mock: the reply is not served because it cannot be recorded: "+err.Error(), "")
}

// answer calls OnAnswer once, when a 200 reply to a model call is about
// to be complete. It reports whether to send the rest; when not, the
// reply is not complete.
func (x *exchange) answer() bool {
	if x.answered || x.lg.Response == nil {
		return !x.unanswered
	}
	x.answered = true
	x.lg.Complete, x.lg.End = true, x.s.opts.Now()
	if f := x.s.opts.OnAnswer; f != nil {
		if err := f(*x.lg); err != nil {
			x.lg.Complete, x.unanswered, x.answerErr = false, true, err
			return false
		}
	}
	return true
}

func (x *exchange) fail(status int, kind errKind, msg, param string) {
	x.failAPI(&apiError{status: status, kind: kind, msg: msg, param: param})
}

func (x *exchange) failAPI(e *apiError) {
	x.lg.Status, x.lg.Error = e.status, e.msg
	x.w.Header().Set(x.dialect.requestIDHeader(), x.s.newID("req_"))
	x.dialect.writeError(x, e)
}

// readBody reads a POST body as the real APIs accept it: JSON (any
// charset parameter), up to the size cap.
func (x *exchange) readBody() ([]byte, bool) {
	if x.r.Method != http.MethodPost {
		x.w.Header().Set("Allow", http.MethodPost)
		x.fail(http.StatusMethodNotAllowed, errNotFound, fmt.Sprintf("%s is not allowed on %s; send a POST with a JSON body", x.r.Method, x.r.URL.Path), "")
		return nil, false
	}
	if ct := x.r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			x.fail(http.StatusBadRequest, errInvalidRequest, fmt.Sprintf("content-type %q is not supported; send the body as JSON with content-type: application/json", ct), "")
			return nil, false
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(x.w, x.r.Body, x.s.opts.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		x.fail(http.StatusRequestEntityTooLarge, errTooLarge, fmt.Sprintf("request body is larger than the %d bytes this server accepts; send a smaller request", x.s.opts.MaxBodyBytes), "")
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		x.s.cutConn(connOf(x.r.Context()), Cut{Client: x.r.RemoteAddr, Timeout: TimeoutRead, After: x.s.opts.ReadTimeout, Received: int64(len(body))})
		x.fail(http.StatusRequestTimeout, errInvalidRequest, fmt.Sprintf("the request body did not arrive within %s; send the whole request at once", x.s.opts.ReadTimeout), "")
		return nil, false
	case err != nil:
		x.fail(http.StatusBadRequest, errInvalidRequest, "could not read the request body: "+err.Error(), "")
		return nil, false
	}
	x.lg.Body, x.lg.BodyBytes = body, len(body)
	return body, true
}

func (x *exchange) handleModelCall() {
	body, ok := x.readBody()
	if !ok {
		return
	}
	req, stream, wopts, apiErr := x.dialect.decode(body, x.r.Header)
	x.lg.Request, x.lg.Stream = req, stream
	if apiErr != nil {
		x.failAPI(apiErr)
		return
	}
	ctx := x.r.Context()
	if v := x.r.Header.Values(ConversationHeader); len(v) > 0 {
		ctx = WithConversation(ctx, v[0])
	}
	rep, err := x.s.src.Next(ctx, req)
	if err != nil {
		x.sourceError(err)
		return
	}
	x.lg.Turn, x.lg.Conversation = rep.Turn, rep.Conversation
	if f := rep.Fault; f.Status != 0 {
		x.lg.Status = f.Status
		if x.accept() {
			x.faultStatus(&rep)
		}
		return
	}
	x.lg.Status = http.StatusOK
	x.lg.Response = &rep.Response
	if !x.accept() {
		return
	}
	x.w.Header().Set(x.dialect.requestIDHeader(), x.s.newID("req_"))
	if stream {
		x.w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		x.w.Header().Set("Cache-Control", "no-cache")
		x.dialect.writeSSE(x, &rep, wopts)
		x.stream.finish()
		return
	}
	if !x.stall(rep.Fault.Stall) {
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	x.dialect.writeJSON(x, &rep)
}

// sourceError answers a request the source could not answer. These are
// problems of the test setup, not of the API, so clients are told not to
// retry (x-should-retry: false, which the official SDKs honour).
func (x *exchange) sourceError(err error) {
	x.w.Header().Set("X-Should-Retry", "false")
	var te *TurnError
	switch {
	case errors.As(err, &te) && errors.Is(err, ErrExpectation):
		x.lg.Turn, x.lg.Conversation = te.Turn, te.Conversation
		x.fail(http.StatusBadRequest, errInvalidRequest, "mock script: "+err.Error(), te.Field)
	case errors.As(err, &te):
		x.lg.Turn, x.lg.Conversation = te.Turn, te.Conversation
		x.fail(http.StatusInternalServerError, errServer, "mock script: "+err.Error(), "")
	case errors.Is(err, ErrNoConversation):
		x.fail(http.StatusBadRequest, errInvalidRequest, "mock script: "+err.Error(), "")
	default:
		x.fail(http.StatusInternalServerError, errServer, "mock: "+err.Error(), "")
	}
}

func (x *exchange) faultStatus(rep *Reply) {
	f := rep.Fault
	if f.RetryAfter > 0 {
		secs := int((f.RetryAfter + time.Second - 1) / time.Second)
		x.w.Header().Set("Retry-After", strconv.Itoa(secs))
		x.w.Header().Set("Retry-After-Ms", strconv.FormatInt(f.RetryAfter.Milliseconds(), 10))
	}
	kind := errServer
	msg := "Internal server error"
	switch f.Status {
	case http.StatusTooManyRequests:
		kind, msg = errRateLimit, "Rate limit exceeded (injected by mock script turn "+strconv.Itoa(rep.Turn)+"); retry after the Retry-After delay"
	case 529:
		kind, msg = errOverloaded, "Overloaded (injected by mock script turn "+strconv.Itoa(rep.Turn)+")"
	case http.StatusUnauthorized, http.StatusForbidden:
		kind, msg = errAuth, "invalid x-api-key (injected by mock script turn "+strconv.Itoa(rep.Turn)+")"
	default:
		if f.Status < 500 {
			kind = errInvalidRequest
		}
		msg = fmt.Sprintf("HTTP %d injected by mock script turn %d", f.Status, rep.Turn)
	}
	x.fail(f.Status, kind, msg, "")
}

// stall waits d, or until the request is cancelled; it reports whether to
// go on.
func (x *exchange) stall(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-x.r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

func (x *exchange) writeJSONBody(v any, malformed bool) {
	b, err := json.Marshal(v)
	if err != nil {
		x.fail(http.StatusInternalServerError, errServer, "mock: cannot encode the reply: "+err.Error(), "")
		return
	}
	x.writeRawJSONBody(b, malformed)
}

// writeRawJSONBody sends an encoded JSON reply (cut in half when malformed
// is set) once OnAnswer has recorded it.
func (x *exchange) writeRawJSONBody(b []byte, malformed bool) {
	if malformed {
		b = b[:len(b)/2]
	} else if !x.answer() {
		x.lg.Response = nil
		x.unrecorded(x.answerErr)
		return
	}
	x.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	x.lg.FirstByte = x.s.opts.Now()
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(b)
}

func (x *exchange) handleCountTokens() {
	body, ok := x.readBody()
	if !ok {
		return
	}
	req, _, _, apiErr := anthropicDialect{}.decodeCount(body, x.r.Header)
	x.lg.Request = req
	if apiErr != nil {
		x.failAPI(apiErr)
		return
	}
	x.lg.Status = http.StatusOK
	x.w.Header().Set("Request-Id", x.s.newID("req_"))
	x.w.Header().Set("Content-Type", "application/json")
	x.writeJSONBody(map[string]int64{"input_tokens": estimateTokens(req)}, false)
}

// modelsDialectFor picks the error and list format by the client's
// headers: Anthropic clients send anthropic-version.
func modelsDialectFor(r *http.Request) dialect {
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" {
		return anthropicDialect{}
	}
	return chatDialect{}
}

func (x *exchange) handleModels(id string) {
	if x.r.Method != http.MethodGet {
		x.fail(http.StatusMethodNotAllowed, errNotFound, "send GET to list models", "")
		return
	}
	model := x.s.src.Model()
	if id == "" {
		id = model
	}
	x.lg.Status = http.StatusOK
	x.w.Header().Set(x.dialect.requestIDHeader(), x.s.newID("req_"))
	x.w.Header().Set("Content-Type", "application/json")
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, ok := x.dialect.(anthropicDialect); ok {
		m := map[string]any{"type": "model", "id": id, "display_name": id, "created_at": created.Format(time.RFC3339)}
		if strings.HasSuffix(x.r.URL.Path, "/models") || strings.HasSuffix(x.r.URL.Path, "/models/") {
			x.writeJSONBody(map[string]any{"data": []any{m}, "has_more": false, "first_id": id, "last_id": id}, false)
			return
		}
		x.writeJSONBody(m, false)
		return
	}
	m := map[string]any{"id": id, "object": "model", "created": created.Unix(), "owned_by": "retrace-mock"}
	if strings.HasSuffix(x.r.URL.Path, "/models") || strings.HasSuffix(x.r.URL.Path, "/models/") {
		x.writeJSONBody(map[string]any{"object": "list", "data": []any{m}}, false)
		return
	}
	x.writeJSONBody(m, false)
}

// sse writes server-sent events. Frames are gathered and sent together
// (the protocol is a byte stream: where the TCP segments end means nothing
// to a client), flushed before an injected stall so that the client sees
// the reply start, and at the end: a write system call per frame was most
// of the cost of a streamed reply.
type sse struct {
	x       *exchange
	flusher http.Flusher
	buf     *bytes.Buffer
	enc     *json.Encoder
	// stallPending is set until the mid-stream stall has happened.
	stallPending bool
	started      bool
}

// sseFlushBytes is how much a stream gathers before it sends.
const sseFlushBytes = 32 << 10

// sseBuffers recycles the buffers of finished streams.
var sseBuffers = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 4<<10)) }}

func newSSE(x *exchange, f Fault) *sse {
	fl, _ := x.w.(http.Flusher)
	buf := sseBuffers.Get().(*bytes.Buffer)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	s := &sse{x: x, flusher: fl, buf: buf, enc: enc, stallPending: f.Stall > 0}
	x.stream = s
	return s
}

// event writes one frame; name is omitted for OpenAI Chat's data-only frames.
func (s *sse) event(name string, v any) {
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(name)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	if raw, ok := v.(string); ok {
		s.buf.WriteString(raw)
	} else {
		_ = s.enc.Encode(v)
		s.buf.Truncate(s.buf.Len() - 1) // Encode's newline
	}
	s.buf.WriteString("\n\n")
	if s.buf.Len() >= sseFlushBytes {
		s.send(false)
	}
}

// frame starts a frame whose data the caller appends to the returned
// slice and hands to endFrame; it spares a copy for hand-encoded frames.
func (s *sse) frame(name string) []byte {
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(name)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString("data: ")
	return s.buf.AvailableBuffer()
}

// endFrame ends a frame begun with frame.
func (s *sse) endFrame(data []byte) {
	s.buf.Write(data)
	s.buf.WriteString("\n\n")
	if s.buf.Len() >= sseFlushBytes {
		s.send(false)
	}
}

// last writes the final frame of a complete reply, after OnAnswer; when
// OnAnswer failed, the stream ends without it.
func (s *sse) last(name string, v any) {
	if s.x.answer() {
		s.event(name, v)
	}
}

// send writes the gathered frames, and flushes them to the client when
// flush is set.
func (s *sse) send(flush bool) {
	if !s.started {
		s.started = true
		s.x.lg.FirstByte = s.x.s.opts.Now()
		s.x.w.WriteHeader(http.StatusOK)
	}
	if s.buf.Len() > 0 {
		_, _ = s.x.w.Write(s.buf.Bytes())
		s.buf.Reset()
	}
	if flush && s.flusher != nil {
		s.flusher.Flush()
	}
}

// finish sends what is left and recycles the buffer; the server flushes
// the end of the reply when the handler returns.
func (s *sse) finish() {
	s.send(false)
	if s.buf.Cap() <= 4*sseFlushBytes {
		sseBuffers.Put(s.buf)
	}
	s.buf, s.enc = nil, nil
}

// midpoint is called after the first content delta: where a stall or a
// malformed frame is injected. It reports whether to go on.
func (s *sse) midpoint(f Fault, broken string) bool {
	if f.MalformedSSE {
		s.buf.WriteString(broken)
		return false
	}
	if s.stallPending {
		s.stallPending = false
		s.send(true)
		return s.x.stall(f.Stall)
	}
	return true
}

// alive reports whether the client is still there.
func (s *sse) alive() bool { return s.x.r.Context().Err() == nil }

// chunks splits s into about four pieces of at most 256 bytes, at rune
// boundaries, so a JSON input always arrives in several deltas as the real
// APIs send it.
func chunks(s string) []string {
	if s == "" {
		return nil
	}
	size := min(max(len(s)/4, 4), 256)
	out := make([]string, 0, len(s)/size+1)
	for len(s) > size {
		n := size
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = size
			for n < len(s) && !utf8.RuneStart(s[n]) {
				n++
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// loggedPath is what the request log shows as a request's path: the path
// and query, or for CONNECT (which has no path) the host:port the client
// asked to tunnel to.
func loggedPath(r *http.Request) string {
	if r.Method == http.MethodConnect {
		if r.RequestURI != "" {
			return r.RequestURI
		}
		return r.Host
	}
	return r.URL.RequestURI()
}
