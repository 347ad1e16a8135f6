package mockllm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
)

// The http.Server closes a connection whose read deadline runs out without
// saying so. To log who was cut and by which timeout, each connection is
// wrapped: it counts the bytes read since it last became idle and notices
// a read that failed on the deadline.

// trackingListener wraps each accepted connection in a trackedConn.
type trackingListener struct {
	net.Listener
	s *Server
}

// Accept implements net.Listener.
func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, s: l.s}, nil
}

// trackedConn is a connection that reports when a read deadline cuts it.
type trackedConn struct {
	net.Conn
	s *Server
	// state is the http.ConnState, set by trackState.
	state atomic.Int32
	// received counts the bytes read since the connection opened or last
	// became idle: the start of the request being read.
	received atomic.Int64
	// reported is set once the cut has been reported.
	reported atomic.Bool
}

// Read implements net.Conn.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.received.Add(int64(n))
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.deadline()
	}
	return n, err
}

// deadline reports a read that ran into the deadline between requests:
// while a handler runs (StateActive), the handler reports a body that came
// too slowly, and the server's own background read is not a cut.
func (c *trackedConn) deadline() {
	s := c.s
	cut := Cut{Client: c.RemoteAddr().String(), Received: c.received.Load()}
	switch http.ConnState(c.state.Load()) {
	case http.StateNew:
		cut.Timeout, cut.After = TimeoutReadHeader, s.opts.ReadHeaderTimeout
	case http.StateIdle:
		cut.Timeout, cut.After = TimeoutIdle, s.opts.IdleTimeout
		if cut.Received > 0 {
			// A request had begun: its headers were too slow.
			cut.Timeout, cut.After = TimeoutReadHeader, s.opts.ReadHeaderTimeout
		}
	default:
		return
	}
	s.cutConn(c, cut)
}

// cutConn counts and reports a cut, once per connection.
func (s *Server) cutConn(c *trackedConn, cut Cut) {
	if c != nil && c.reported.Swap(true) {
		return
	}
	s.cut.Add(1)
	cut.Time = s.opts.Now()
	if s.opts.OnCut != nil {
		s.opts.OnCut(cut)
	}
}

// trackState is the http.Server's ConnState hook.
func trackState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*trackedConn)
	if !ok {
		return
	}
	if st == http.StateIdle {
		c.received.Store(0)
	}
	c.state.Store(int32(st))
}

type connKey struct{}

// withConn is the http.Server's ConnContext hook: it lets a handler find
// its connection.
func withConn(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*trackedConn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// connOf returns the connection of a request's context, or nil.
func connOf(ctx context.Context) *trackedConn {
	c, _ := ctx.Value(connKey{}).(*trackedConn)
	return c
}
