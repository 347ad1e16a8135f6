package mcp

import (
	"sync"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// Lifecycle carries the servers' state changes into the session: its
// OnEvent (given as Options.OnEvent) adds the tools of a server that
// connected or reconnected to the registry at once, and queues the change
// as a trajectory mcp_server event, which the agent loop takes with Drain
// before each request, records, and announces the new tools from. A tool is in the registry before its event is queued, so a
// recorded "connected" never names a tool that cannot be called. It is
// safe for concurrent use.
type Lifecycle struct {
	reg  *tools.Registry
	warn func(string)

	mu     sync.Mutex
	queued []*trajectory.MCPServer
}

// NewLifecycle returns a Lifecycle that adds tools to reg; warn, when not
// nil, is told of a tool the registry refused.
func NewLifecycle(reg *tools.Registry, warn func(string)) *Lifecycle {
	return &Lifecycle{reg: reg, warn: warn}
}

// OnEvent is an Options.OnEvent.
func (l *Lifecycle) OnEvent(ev Event) {
	p := &trajectory.MCPServer{Server: ev.Server, State: trajectory.MCPServerState(ev.State), Attempt: ev.Attempt}
	if ev.Err != nil {
		p.Error = ev.Err.Error()
	}
	for _, t := range ev.Tools {
		if _, err := l.reg.AddMissing(t); err != nil {
			if l.warn != nil {
				l.warn(err.Error())
			}
			continue
		}
		p.Tools = append(p.Tools, t.Spec().Name)
	}
	l.mu.Lock()
	l.queued = append(l.queued, p)
	l.mu.Unlock()
}

// Drain returns the events queued since the last call, in order.
func (l *Lifecycle) Drain() []*trajectory.MCPServer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.queued
	l.queued = nil
	return out
}
