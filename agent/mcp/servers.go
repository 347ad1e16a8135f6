package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/procgroup"
	"github.com/retrace-dev/retrace/agent/tools"
)

// How many servers connect at once: a local server is a process to spawn,
// and twenty at once would swamp the machine; a remote one is only an HTTP
// connection (seed §12.3 (5)).
const (
	localConnects  = 3
	remoteConnects = 20
)

// stderrTail is how much of a stdio server's stderr is kept to explain a
// failed start.
const stderrTail = 2048

// Options are the runtime's settings for Connect.
type Options struct {
	// Dir is the working directory of stdio servers, usually the
	// workspace; "" means the current directory.
	Dir string
	// Environ is the base environment of stdio servers, to which each
	// config's env is added; nil means this process's environment.
	Environ []string
	// ConnectTimeout bounds starting one server and listing its tools;
	// zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// ServerError is a server that could not be used, or one of its tools
// that could not be offered to the model. The error names the server, so
// the user knows which config entry to look at.
type ServerError struct {
	// Server is the configured name of the server.
	Server string
	// Tool is the server's name for the tool, or "" when the whole server
	// failed.
	Tool string
	// Err is what went wrong.
	Err error
}

// Error names the server (and the tool) and the cause.
func (e *ServerError) Error() string {
	if e.Tool != "" {
		return fmt.Sprintf("mcp server %q: tool %q is not offered to the model: %v", e.Server, e.Tool, e.Err)
	}
	return fmt.Sprintf("mcp server %q: %v", e.Server, e.Err)
}

// Unwrap returns the cause.
func (e *ServerError) Unwrap() error { return e.Err }

// Servers is the set of configured MCP servers of one session, connecting
// in the background. It is safe for concurrent use.
type Servers struct {
	opts   Options
	cancel context.CancelFunc
	stop   func() bool // stops watching the caller's ctx
	wg     sync.WaitGroup
	done   chan struct{}

	mu      sync.Mutex
	closed  bool
	servers []*server // config order
}

// server is one configured server and what became of it.
type server struct {
	cfg      Config
	pending  bool
	err      error          // set when the server failed
	tools    []*Tool        // sorted by name
	problems []*ServerError // tools not offered
	session  *sdk.ClientSession
	// group is a stdio server's process group, which dies with retrace
	// (package procgroup); released on Close.
	group *procgroup.Group
}

// Connect validates cfgs and starts connecting to every server
// concurrently. It returns at once; the servers are pending until they
// have connected and listed their tools, or failed. The error reports
// every config problem, each as a *ConfigError, and then nothing is
// started. Close the Servers when the session ends.
func Connect(ctx context.Context, cfgs []Config, opts Options) (*Servers, error) {
	if err := Validate(cfgs); err != nil {
		return nil, err
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Servers{opts: opts, cancel: cancel, done: make(chan struct{})}
	local, remote := make(chan struct{}, localConnects), make(chan struct{}, remoteConnects)
	for _, c := range cfgs {
		srv := &server{cfg: c, pending: true}
		s.servers = append(s.servers, srv)
		sem := local
		if c.remote() {
			sem = remote
		}
		s.wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-life.Done():
				s.settle(srv, nil, nil, nil, fmt.Errorf("not connected: %w", life.Err()))
				return
			}
			s.connect(life, srv)
		})
	}
	go func() {
		s.wg.Wait()
		close(s.done)
	}()
	// The caller's ctx ending (e.g. the session aborted) stops connecting
	// servers too; sessions already made stay until Close.
	s.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, srv := range s.servers {
			if srv.pending {
				cancel()
				return
			}
		}
	})
	return s, nil
}

// connect starts one server, lists its tools and records the outcome.
func (s *Servers) connect(life context.Context, srv *server) {
	ctx, cancel := context.WithTimeout(life, s.opts.ConnectTimeout)
	defer cancel()
	transport, stderr, group, err := s.transport(srv.cfg)
	if err != nil {
		s.settle(srv, nil, nil, nil, err)
		return
	}
	s.mu.Lock()
	srv.group = group
	s.mu.Unlock()
	client := sdk.NewClient(&sdk.Implementation{Name: "retrace", Version: "dev"}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		s.settle(srv, nil, nil, nil, startError(ctx, s.opts.ConnectTimeout, err, stderr))
		return
	}
	var listed []*sdk.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			_ = session.Close()
			s.settle(srv, nil, nil, nil, fmt.Errorf("listing tools: %w", startError(ctx, s.opts.ConnectTimeout, err, stderr)))
			return
		}
		listed = append(listed, t)
	}
	ts, problems := buildTools(srv.cfg, session, listed)
	s.settle(srv, session, ts, problems, nil)
}

// buildTools turns a server's listing into tools sorted by name, with the
// tools that cannot be offered reported.
func buildTools(cfg Config, session *sdk.ClientSession, listed []*sdk.Tool) ([]*Tool, []*ServerError) {
	raw := make([]string, len(listed))
	for i, t := range listed {
		raw[i] = t.Name
	}
	names := toolNames(cfg.Name, raw)
	var out []*Tool
	var problems []*ServerError
	seen := make(map[string]bool, len(listed))
	for i, t := range listed {
		if seen[names[i]] {
			problems = append(problems, &ServerError{Server: cfg.Name, Tool: t.Name,
				Err: fmt.Errorf("its name %s is already taken by another of the server's tools", names[i])})
			continue
		}
		tool, err := newTool(cfg, session, names[i], t)
		if err != nil {
			problems = append(problems, &ServerError{Server: cfg.Name, Tool: t.Name, Err: err})
			continue
		}
		seen[names[i]] = true
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out, problems
}

// startError explains a failed start, with the end of the server's
// stderr when it wrote any: that is usually where the reason is.
func startError(ctx context.Context, timeout time.Duration, err error, stderr *tailBuffer) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("did not finish starting within %v: %w", timeout, err)
	}
	if tail := stderr.String(); tail != "" {
		return fmt.Errorf("%w; its stderr ends with: %s", err, tail)
	}
	return err
}

// settle records a server's outcome. A server that finishes after Close
// is closed at once.
func (s *Servers) settle(srv *server, session *sdk.ClientSession, ts []*Tool, problems []*ServerError, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && session != nil {
		_ = session.Close()
		session, ts, err = nil, nil, errors.New("closed while connecting")
	}
	srv.pending = false
	srv.session, srv.tools, srv.problems, srv.err = session, ts, problems, err
}

// transport builds the server's transport, the buffer that keeps the end
// of a stdio server's stderr and the process group the server starts in.
func (s *Servers) transport(c Config) (sdk.Transport, *tailBuffer, *procgroup.Group, error) {
	tail := &tailBuffer{}
	if c.remote() {
		client := &http.Client{Transport: headerTransport{headers: c.Headers, base: http.DefaultTransport}}
		return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client}, tail, nil, nil
	}
	// The server and whatever it starts (npx starts node) die with
	// retrace; no parent-death signal, since the SDK starts the process on
	// a thread we do not hold.
	group, err := procgroup.New()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command(c.Command, c.Args...)
	group.Join(cmd)
	cmd.Dir = s.opts.Dir
	env := s.opts.Environ
	if env == nil {
		env = cmd.Environ()
	}
	env = slices.Clone(env)
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+c.Env[k])
	}
	cmd.Env = env
	cmd.Stderr = tail
	return &sdk.CommandTransport{Command: cmd}, tail, group, nil
}

// Pending returns the names of the servers still connecting, sorted, so
// that a search that finds nothing can say "retry shortly" rather than
// "no such tool" (seed §12.4).
func (s *Servers) Pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, srv := range s.servers {
		if srv.pending {
			names = append(names, srv.cfg.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Tools returns the tools of every connected server, sorted by name, so
// the definitions keep one order whatever order the servers connected in
// (seed §3.5). Names of different servers cannot meet except by a hash
// collision; should one happen, the server earlier in the config wins.
func (s *Servers) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tools.Tool
	seen := map[string]bool{}
	for _, srv := range s.servers {
		for _, t := range srv.tools {
			if !seen[t.spec.Name] {
				seen[t.spec.Name] = true
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	return out
}

// Failures returns the servers that failed and the tools that could not be
// offered, in config order.
func (s *Servers) Failures() []*ServerError {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*ServerError
	for _, srv := range s.servers {
		if srv.err != nil {
			out = append(out, &ServerError{Server: srv.cfg.Name, Err: srv.err})
		}
		out = append(out, srv.problems...)
	}
	return out
}

// Wait blocks until every server has connected or failed, or ctx ends.
func (s *Servers) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the servers still connecting and closes every session; a
// stdio server's process is ended. It waits for the connecting goroutines.
func (s *Servers) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, srv := range s.servers {
		if srv.session != nil {
			if err := srv.session.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
				errs = append(errs, &ServerError{Server: srv.cfg.Name, Err: fmt.Errorf("closing: %w", err)})
			}
			srv.session = nil
		}
		if srv.group != nil {
			srv.group.Release()
			srv.group = nil
		}
	}
	return errors.Join(errs...)
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTail {
		t.buf = slices.Clone(t.buf[len(t.buf)-stderrTail:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
