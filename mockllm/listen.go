package mockllm

import (
	"io"
	"log"
	"net"
	"net/http"
)

// StartOn serves in the background on a listener the caller made, such
// as a Unix socket that a forwarder inside an agent's own network
// namespace carries connections to (retrace eval of an agent CLI). It
// returns the base URL of the listener's address, which is meaningful
// only for a TCP listener; the caller that forwards knows the URL its
// clients use. The connection timeouts and Close work as after Start.
func (s *Server) StartOn(ln net.Listener) string {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: s.opts.ReadHeaderTimeout, ReadTimeout: s.opts.ReadTimeout,
		IdleTimeout: s.opts.IdleTimeout, ConnState: trackState, ConnContext: withConn,
		ErrorLog: log.New(io.Discard, "", 0)}
	s.srvMu.Lock()
	s.srv, s.url = srv, "http://"+ln.Addr().String()
	s.srvMu.Unlock()
	go func() { _ = srv.Serve(&trackingListener{Listener: ln, s: s}) }()
	return s.url
}
