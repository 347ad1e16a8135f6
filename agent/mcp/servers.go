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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/procgroup"
	"github.com/retrace-dev/retrace/agent/tools"
)

// How many servers connect at once: a local server is a process to spawn,
// and twenty at once would swamp the machine; a remote one is only an HTTP
// connection.
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
	// Heartbeat is the interval of the ping that tells a hung server from
	// a quiet one; zero means DefaultHeartbeat, negative turns it off
	// (a server whose connection closes is still noticed at once).
	Heartbeat time.Duration
	// HeartbeatTimeout is how long one heartbeat ping may wait for its
	// answer; zero means half the Heartbeat.
	HeartbeatTimeout time.Duration
	// ReconnectBase is the first wait before reconnecting a server that
	// died; each further attempt waits twice as long. Zero means
	// DefaultReconnectBase.
	ReconnectBase time.Duration
	// MaxReconnects is how many reconnect attempts are made before the
	// server is given up as failed; zero means DefaultMaxReconnects,
	// negative means never reconnect.
	MaxReconnects int
	// OnEvent, when set, is told every change of a server's state, in
	// order per server, from the goroutine that made the change and never
	// under the Servers' lock. The runtime records them (trajectory
	// mcp_server events) and announces new tools to the model.
	OnEvent func(Event)
}

// heartbeatMisses is how many heartbeat pings in a row must go
// unanswered before a server is taken for dead: one late answer on a
// loaded machine is not a dead server.
const heartbeatMisses = 2

// The reconnect and heartbeat settings.
const (
	DefaultHeartbeat     = 30 * time.Second
	DefaultReconnectBase = time.Second
	DefaultMaxReconnects = 5
)

// State is where a server is in its life.
type State string

// The states of a server. A server starts pending; it becomes connected
// or failed; a connected server that dies is reconnecting until it is
// reconnected or, after MaxReconnects attempts, failed.
const (
	StatePending      State = "pending"
	StateConnected    State = "connected"
	StateFailed       State = "failed"
	StateReconnecting State = "reconnecting"
	StateReconnected  State = "reconnected"
)

// Event is one change of a server's state.
type Event struct {
	// Server is the configured name of the server.
	Server string
	// State is the state entered.
	State State
	// Tools are the server's tools, sorted by name, when State is
	// connected or reconnected.
	Tools []tools.Tool
	// Attempt counts the reconnect attempts, from 1, for reconnecting
	// (the attempt about to be made) and reconnected.
	Attempt int
	// Err is why the server failed or is reconnecting.
	Err error
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
	life   context.Context
	cancel context.CancelFunc
	stop   func() bool // stops watching the caller's ctx
	wg     sync.WaitGroup
	done   chan struct{}
	// watchers are the goroutines that watch connected servers and
	// reconnect them; Close waits for them.
	watchers sync.WaitGroup

	// notices explain the configured choices Connect changed.
	notices []string

	mu      sync.Mutex
	closed  bool
	servers []*server // config order
}

// Notices explain the configured choices Connect changed, for the user:
// today, the resident servers it deferred because other servers are
// deferred.
func (s *Servers) Notices() []string { return slices.Clone(s.notices) }

// server is one configured server and what became of it.
type server struct {
	cfg Config
	// deferred is whether the server's tools are deferred: the config's
	// choice unless the session mixes resident and deferred servers
	// (deferrals).
	deferred bool
	pending  bool
	state    State
	attempt  int            // the reconnect attempt under way
	lost     error          // why the connection was lost, while reconnecting
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
	if opts.Heartbeat == 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = opts.Heartbeat / 2
	}
	if opts.ReconnectBase <= 0 {
		opts.ReconnectBase = DefaultReconnectBase
	}
	if opts.MaxReconnects == 0 {
		opts.MaxReconnects = DefaultMaxReconnects
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Servers{opts: opts, life: life, cancel: cancel, done: make(chan struct{})}
	local, remote := make(chan struct{}, localConnects), make(chan struct{}, remoteConnects)
	deferred, notices := deferrals(cfgs)
	s.notices = notices
	for i, c := range cfgs {
		srv := &server{cfg: c, deferred: deferred[i], pending: true, state: StatePending}
		s.servers = append(s.servers, srv)
		s.notify(Event{Server: c.Name, State: StatePending})
		sem := local
		if c.remote() {
			sem = remote
		}
		s.wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-life.Done():
				s.settle(srv, nil, nil, nil, nil, fmt.Errorf("not connected: %w", life.Err()))
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

// connect starts one server, lists its tools and records the outcome; a
// server that connected is then watched.
func (s *Servers) connect(life context.Context, srv *server) {
	session, ts, problems, group, err := s.dial(life, srv)
	s.settle(srv, session, ts, problems, group, err)
	if session != nil {
		s.watchers.Go(func() { s.watch(life, srv, session) })
	}
}

// dial starts the server, does the handshake and lists its tools, within
// the connect timeout.
func (s *Servers) dial(life context.Context, srv *server) (*sdk.ClientSession, []*Tool, []*ServerError, *procgroup.Group, error) {
	ctx, cancel := context.WithTimeout(life, s.opts.ConnectTimeout)
	defer cancel()
	transport, stderr, group, err := s.transport(srv.cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	fail := func(err error) (*sdk.ClientSession, []*Tool, []*ServerError, *procgroup.Group, error) {
		if group != nil {
			group.Release()
		}
		return nil, nil, nil, nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "retrace", Version: "dev"}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fail(startError(ctx, s.opts.ConnectTimeout, err, stderr))
	}
	var listed []*sdk.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			_ = session.Close()
			return fail(fmt.Errorf("listing tools: %w", startError(ctx, s.opts.ConnectTimeout, err, stderr)))
		}
		listed = append(listed, t)
	}
	ts, problems := buildTools(s, srv, listed)
	return session, ts, problems, group, nil
}

// watch waits for a connected server to die — its connection closes, or
// it does not answer the heartbeat — and then reconnects it with
// exponential backoff, until it is back, it is given up, or life ends.
func (s *Servers) watch(life context.Context, srv *server, session *sdk.ClientSession) {
	for {
		lost := s.monitor(life, session)
		if lost == nil {
			return
		}
		// Closing a hung server's session can hang as well (its HTTP
		// requests get no answer), so it is not waited for: the reconnect
		// must not depend on the dead connection letting go.
		dead := session
		go func() { _ = dead.Close() }()
		session = s.reconnect(life, srv, lost)
		if session == nil {
			return
		}
	}
}

// monitor returns why session died, or nil when life ended first.
func (s *Servers) monitor(life context.Context, session *sdk.ClientSession) error {
	closed := make(chan error, 1)
	go func() { closed <- session.Wait() }()
	var tick <-chan time.Time
	missed := 0
	if s.opts.Heartbeat > 0 {
		t := time.NewTicker(s.opts.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-life.Done():
			return nil
		case err := <-closed:
			if life.Err() != nil {
				return nil
			}
			if err == nil {
				return errors.New("the server closed the connection")
			}
			return fmt.Errorf("the connection closed: %w", err)
		case <-tick:
			ctx, cancel := context.WithTimeout(life, s.opts.HeartbeatTimeout)
			err := session.Ping(ctx, nil)
			cancel()
			if life.Err() != nil {
				return nil
			}
			if we, ok := errors.AsType[*jsonrpc.Error](err); ok && we.Code == jsonrpc.CodeMethodNotFound {
				// A server without ping cannot be probed; its closing
				// connection is still seen.
				tick = nil
				continue
			}
			if err == nil {
				missed = 0
				continue
			}
			if missed++; missed >= heartbeatMisses {
				return fmt.Errorf("no answer to %d heartbeat pings in a row, each given %v: %w", missed, s.opts.HeartbeatTimeout, err)
			}
		}
	}
}

// reconnect makes up to MaxReconnects attempts, waiting the server's
// reconnect_backoff (or ReconnectBase), then twice as long each time. It returns the new session, or nil when
// the server was given up as failed or life ended.
func (s *Servers) reconnect(life context.Context, srv *server, lost error) *sdk.ClientSession {
	max := s.opts.MaxReconnects
	if max < 0 {
		s.fail(srv, fmt.Errorf("disconnected (%v); reconnecting is off", lost))
		return nil
	}
	wait := s.opts.ReconnectBase
	if srv.cfg.ReconnectBackoff > 0 {
		wait = srv.cfg.ReconnectBackoff
	}
	last := lost
	for attempt := 1; attempt <= max; attempt++ {
		s.mu.Lock()
		srv.state, srv.attempt, srv.lost = StateReconnecting, attempt, last
		s.mu.Unlock()
		s.notify(Event{Server: srv.cfg.Name, State: StateReconnecting, Attempt: attempt, Err: last})
		select {
		case <-life.Done():
			return nil
		case <-time.After(wait):
		}
		wait *= 2
		session, ts, problems, group, err := s.dial(life, srv)
		if err != nil {
			if life.Err() != nil {
				return nil
			}
			last = err
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = session.Close()
			if group != nil {
				group.Release()
			}
			return nil
		}
		if srv.group != nil {
			srv.group.Release()
		}
		srv.session, srv.tools, srv.problems, srv.group = session, ts, problems, group
		srv.state, srv.lost = StateReconnected, nil
		names := toolList(ts)
		s.mu.Unlock()
		s.notify(Event{Server: srv.cfg.Name, State: StateReconnected, Attempt: attempt, Tools: names})
		return session
	}
	s.fail(srv, fmt.Errorf("disconnected (%v) and not back after %d reconnect attempts: %w", lost, max, last))
	return nil
}

// fail gives a connected server up.
func (s *Servers) fail(srv *server, err error) {
	s.mu.Lock()
	srv.state, srv.err, srv.session = StateFailed, err, nil
	s.mu.Unlock()
	s.notify(Event{Server: srv.cfg.Name, State: StateFailed, Err: err})
}

// errClosed is a call after Close: the runtime's mistake, not the server's.
var errClosed = errors.New("the MCP servers were closed")

// notify passes an event to OnEvent.
func (s *Servers) notify(ev Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(ev)
	}
}

// live returns the session to call srv's tools on, or says why there is
// none: the server is reconnecting, or failed.
func (s *Servers) live(srv *server) (*sdk.ClientSession, State, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, StateFailed, 0, errClosed
	case srv.state == StateReconnecting:
		return nil, srv.state, srv.attempt, srv.lost
	case srv.session == nil:
		err := srv.err
		if err == nil {
			err = errors.New("closed")
		}
		return nil, StateFailed, 0, err
	}
	return srv.session, srv.state, 0, nil
}

func toolList(ts []*Tool) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

// buildTools turns a server's listing into tools sorted by name, with the
// tools that cannot be offered reported.
func buildTools(owner *Servers, srv *server, listed []*sdk.Tool) ([]*Tool, []*ServerError) {
	cfg := srv.cfg
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
		tool, err := newTool(owner, srv, names[i], t)
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

// settle records the outcome of a server's first connect. A server that
// finishes after Close is closed at once.
func (s *Servers) settle(srv *server, session *sdk.ClientSession, ts []*Tool, problems []*ServerError, group *procgroup.Group, err error) {
	s.mu.Lock()
	if s.closed && session != nil {
		_ = session.Close()
		if group != nil {
			group.Release()
		}
		session, ts, group, err = nil, nil, nil, errors.New("closed while connecting")
	}
	srv.session, srv.tools, srv.problems, srv.err, srv.group = session, ts, problems, err, group
	ev := Event{Server: srv.cfg.Name, State: StateConnected, Tools: toolList(ts)}
	if err != nil {
		srv.state = StateFailed
		ev = Event{Server: srv.cfg.Name, State: StateFailed, Err: err}
	} else {
		srv.state = StateConnected
	}
	s.mu.Unlock()
	// Told before the server leaves the pending list, so a tool is always
	// pending or registered (OnEvent registers it), never neither.
	s.notify(ev)
	s.mu.Lock()
	srv.pending = false
	s.mu.Unlock()
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
// "no such tool".
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
// the definitions keep one order whatever order the servers connected in. Names of different servers cannot meet except by a hash
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
	s.watchers.Wait()
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
