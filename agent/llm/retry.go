package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	openaisse "github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/retrace-dev/retrace/trajectory"
)

// Retry policy bounds.
const (
	maxRetryAfter = 60 * time.Second
	backoffBase   = 500 * time.Millisecond
	backoffCap    = 8 * time.Second
)

// retrier runs a call with our own retries (the SDKs' are off) so that
// every failed attempt is seen by Options.OnRetry.
type retrier struct {
	opts Options
	// base and cap are the exponential backoff bounds; fields so tests can
	// shrink them instead of sleeping for real seconds.
	base, cap time.Duration
}

func newRetrier(opts Options) retrier {
	return retrier{opts: opts, base: backoffBase, cap: backoffCap}
}

// stream runs a streamed call: fn gets each attempt and the function that
// hands events to onEvent. Once an event has been handed on, a failure is
// not retried (see run).
func (r retrier) stream(ctx context.Context, onEvent func(StreamEvent), fn func(a *attempt, emit func(StreamEvent)) (Response, error)) (Response, error) {
	delivered := false
	emit := func(ev StreamEvent) {
		delivered = true
		if onEvent != nil {
			onEvent(ev)
		}
	}
	return r.run(ctx, true, func() bool { return delivered }, func(a *attempt) (Response, error) { return fn(a, emit) })
}

// run calls fn once per attempt until it succeeds, fails for good, or
// delivered reports that the consumer has already seen part of a streamed
// reply (retrying then would repeat text and, worse, tool calls the
// consumer may already have started). The partial Response of the last
// attempt is returned with its error.
func (r retrier) run(ctx context.Context, streaming bool, delivered func() bool, fn func(*attempt) (Response, error)) (Response, error) {
	maxAttempts := r.opts.maxRetries() + 1
	for n := 1; ; n++ {
		a := newAttempt(ctx, r.opts, streaming)
		resp, err := fn(a)
		a.finish()
		resp.Duration = time.Since(a.start)
		resp.RequestBytes = a.requestBytes()
		if streaming {
			resp.TTFT = a.ttft()
		}
		if err == nil {
			return resp, nil
		}
		merr := classify(ctx, a, err)
		will := merr.Retryable() && n < maxAttempts && (delivered == nil || !delivered())
		var wait time.Duration
		if will {
			wait = r.backoff(n, merr.RetryAfter)
		}
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(ModelErrorEvent{Err: merr, Attempt: n, WillRetry: will, Backoff: wait, Duration: resp.Duration})
		}
		if !will {
			return resp, merr
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, &Error{Kind: trajectory.ModelAborted, Err: context.Cause(ctx)}
		case <-t.C:
		}
	}
}

// backoff is the wait before attempt n+1: the server's Retry-After when it
// gave one, else exponential from base with "equal jitter" (half fixed,
// half random) so that many clients do not retry in lockstep.
func (r retrier) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, maxRetryAfter)
	}
	d := r.base
	for i := 1; i < n && d < r.cap; i++ {
		d *= 2
	}
	d = min(d, r.cap)
	half := d / 2
	return half + rand.N(half+1)
}

// timeoutCause is the cause an attempt's watchdog cancels its context
// with, so a timeout is told from a cancellation by type, not by text.
type timeoutCause struct{ kind trajectory.ModelErrorKind }

func (c *timeoutCause) Error() string { return string(c.kind) }

// attempt is one HTTP exchange: its derived context, the watchdog timer
// that cancels it on a first-byte or idle timeout, and its measurements.
type attempt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time
	opts   Options

	mu        sync.Mutex
	timer     *time.Timer
	streaming bool
	firstByte time.Time
	bytes     int
	done      bool
}

func newAttempt(parent context.Context, opts Options, streaming bool) *attempt {
	ctx, cancel := context.WithCancelCause(parent)
	a := &attempt{ctx: ctx, cancel: cancel, start: time.Now(), opts: opts, streaming: streaming}
	a.timer = time.AfterFunc(opts.firstByteTimeout(), a.expire)
	return a
}

func (a *attempt) expire() {
	a.mu.Lock()
	kind := trajectory.ModelFirstByteTimeout
	if !a.firstByte.IsZero() {
		kind = trajectory.ModelIdleTimeout
	}
	done := a.done
	a.mu.Unlock()
	if !done {
		a.cancel(&timeoutCause{kind: kind})
	}
}

// sawFirstByte ends the first-byte phase (once) and restarts the timer
// for the idle phase; every later call just restarts it.
func (a *attempt) sawFirstByte() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	if a.firstByte.IsZero() {
		a.firstByte = time.Now()
	}
	a.timer.Reset(a.opts.idleTimeout())
}

func (a *attempt) finish() {
	a.mu.Lock()
	a.done = true
	a.timer.Stop()
	a.mu.Unlock()
	a.cancel(context.Canceled)
}

func (a *attempt) ttft() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.firstByte.IsZero() {
		return 0
	}
	return a.firstByte.Sub(a.start)
}

func (a *attempt) requestBytes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes
}

func (a *attempt) hadFirstByte() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.firstByte.IsZero()
}

// middleware measures the request body and watches the response: for a
// plain call the headers end the first-byte phase, for a stream its
// first body byte does; after that every body read restarts the idle
// timer. Both SDKs take this function as their option.Middleware.
func (a *attempt) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	size := int(req.ContentLength)
	if size < 0 && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			n, _ := io.Copy(io.Discard, body)
			body.Close()
			size = int(n)
		}
	}
	a.mu.Lock()
	a.bytes = max(size, 0)
	a.mu.Unlock()

	resp, err := next(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if !a.streaming {
		a.sawFirstByte()
	}
	resp.Body = &watchedBody{rc: resp.Body, a: a}
	return resp, nil
}

type watchedBody struct {
	rc io.ReadCloser
	a  *attempt
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.a.sawFirstByte()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// classify turns what an SDK returned into an *Error from status codes
// and error types only (a check on message text silently stops
// working when the wording changes).
func classify(parent context.Context, a *attempt, err error) *Error {
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	if parent.Err() != nil {
		return &Error{Kind: trajectory.ModelAborted, Err: err}
	}
	var tc *timeoutCause
	if errors.As(context.Cause(a.ctx), &tc) {
		return &Error{Kind: tc.kind, Err: err}
	}
	var aerr *anthropic.Error
	if errors.As(err, &aerr) {
		e := &Error{Kind: kindFromStatus(aerr.StatusCode), StatusCode: aerr.StatusCode, RetryAfter: retryAfter(aerr.Response), Err: err}
		if t := aerr.Type(); t != "" && (aerr.StatusCode < 400 || t == anthropic.ErrorTypeOverloadedError) {
			// An error event inside a 200 stream carries only its type.
			e.Kind = kindFromAnthropicType(t)
		}
		return e
	}
	var oerr *openai.Error
	if errors.As(err, &oerr) {
		return &Error{Kind: kindFromStatus(oerr.StatusCode), StatusCode: oerr.StatusCode, RetryAfter: retryAfter(oerr.Response), Err: err}
	}
	var serr *openaisse.StreamError
	if errors.As(err, &serr) {
		return &Error{Kind: trajectory.ModelServerError, Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || isNetTimeout(err) {
		kind := trajectory.ModelFirstByteTimeout
		if a.hadFirstByte() {
			kind = trajectory.ModelIdleTimeout
		}
		return &Error{Kind: kind, Err: err}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &Error{Kind: trajectory.ModelInvalidResponse, Err: err}
	}
	var opErr *net.OpError
	var urlErr *url.Error
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.As(err, &opErr) || errors.As(err, &urlErr) {
		return &Error{Kind: trajectory.ModelConnection, Err: err}
	}
	// What remains was refused before anything was sent (the SDK checks
	// the parameters); sending it again would fail the same way.
	return &Error{Kind: trajectory.ModelBadRequest, Err: err}
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func kindFromStatus(code int) trajectory.ModelErrorKind {
	switch {
	case code == http.StatusTooManyRequests:
		return trajectory.ModelRateLimited
	case code == 529:
		return trajectory.ModelOverloaded
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return trajectory.ModelAuth
	case code == http.StatusRequestTimeout || code >= 500:
		return trajectory.ModelServerError
	case code >= 400:
		return trajectory.ModelBadRequest
	}
	return trajectory.ModelInvalidResponse
}

func kindFromAnthropicType(t anthropic.ErrorType) trajectory.ModelErrorKind {
	switch t {
	case anthropic.ErrorTypeOverloadedError:
		return trajectory.ModelOverloaded
	case anthropic.ErrorTypeRateLimitError:
		return trajectory.ModelRateLimited
	case anthropic.ErrorTypeAuthenticationError, anthropic.ErrorTypePermissionError:
		return trajectory.ModelAuth
	case anthropic.ErrorTypeInvalidRequestError, anthropic.ErrorTypeNotFoundError:
		return trajectory.ModelBadRequest
	}
	return trajectory.ModelServerError
}

// retryAfter reads the server's wait: retry-after-ms (milliseconds, sent
// by both providers), else Retry-After as seconds or an HTTP date.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	return parseRetryAfter(resp.Header, time.Now())
}

func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return capWait(ms / 1000)
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) { // also NaN
			return 0
		}
		return capWait(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, maxRetryAfter)
		}
	}
	return 0
}

// capWait converts seconds to a Duration no longer than maxRetryAfter,
// comparing first so that a huge value cannot overflow.
func capWait(seconds float64) time.Duration {
	if seconds >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(seconds * float64(time.Second))
}
