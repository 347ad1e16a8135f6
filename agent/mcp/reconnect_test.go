package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/tools"
)

// events collects a Servers' lifecycle events for a test.
type events chan Event

func (e events) on(ev Event) { e <- ev }

// next waits for the next event in state want, failing on a timeout; the
// events passed on the way are returned with it.
func (e events) next(t *testing.T, want State) []Event {
	t.Helper()
	var seen []Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-e:
			seen = append(seen, ev)
			if ev.State == want {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %s event; saw %+v", want, seen)
		}
	}
}

// none fails if an event arrives within d.
func (e events) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev := <-e:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(d):
	}
}

func connectWith(t *testing.T, opts Options, cfgs ...Config) *Servers {
	t.Helper()
	s, err := Connect(t.Context(), cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func run(t *testing.T, tool tools.Tool, input string) tools.Result {
	t.Helper()
	res, err := tool.Run(t.Context(), nil, json.RawMessage(input))
	if err != nil {
		t.Fatalf("%s: %v", tool.Spec().Name, err)
	}
	return res
}

// A stdio server whose process exits is reconnected: meanwhile its tools
// answer with a clear "reconnecting" error, and afterwards they work
// again under the same names.
func TestAServerWhoseProcessExitsIsReconnected(t *testing.T) {
	dir := t.TempDir()
	ev := make(events, 16)
	s := connectWith(t, Options{Dir: t.TempDir(), Heartbeat: -1, ReconnectBase: 10 * time.Millisecond, OnEvent: ev.on},
		helperConfig(t, "h", map[string]string{restartEnv: dir}))
	ev.next(t, StateConnected)
	echo, exit := byName(t, s.Tools(), "mcp__h__echo"), byName(t, s.Tools(), "mcp__h__exit")
	if res := run(t, echo, `{"text":"one"}`); res.IsError || res.Output != "echo: one" {
		t.Fatalf("before the crash: %+v", res)
	}

	if res := run(t, exit, `{}`); !res.IsError || res.ErrorCode != CodeDisconnected {
		t.Fatalf("the call that killed the server: %+v; want a %s tool error", res, CodeDisconnected)
	}
	got := ev.next(t, StateReconnecting)
	if r := got[len(got)-1]; r.Attempt != 1 || r.Err == nil {
		t.Fatalf("reconnecting event %+v: want attempt 1 and the reason", r)
	}
	res := run(t, echo, `{"text":"two"}`)
	if !res.IsError || res.ErrorCode != CodeReconnecting || !strings.Contains(res.Output, "is reconnecting (attempt 1 of 5)") {
		t.Fatalf("a call while reconnecting: %+v", res)
	}

	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got = ev.next(t, StateReconnected)
	if r := got[len(got)-1]; r.Attempt != 1 || !slices.ContainsFunc(r.Tools, func(t tools.Tool) bool { return t.Spec().Name == "mcp__h__echo" }) {
		t.Fatalf("reconnected event %+v", r)
	}
	if res := run(t, echo, `{"text":"three"}`); res.IsError || res.Output != "echo: three" {
		t.Fatalf("after reconnecting: %+v", res)
	}
	if f := s.Failures(); len(f) != 0 {
		t.Fatalf("a reconnected server is reported failed: %v", f)
	}
}

// A server that does not come back is given up after MaxReconnects
// attempts: it is reported failed, and its tools say it is disconnected.
func TestAServerThatStaysDownIsGivenUp(t *testing.T) {
	ev := make(events, 16)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := connectWith(t, Options{Dir: t.TempDir(), Heartbeat: -1, ReconnectBase: 5 * time.Millisecond, MaxReconnects: 2, OnEvent: ev.on},
		helperConfig(t, "h", map[string]string{restartEnv: dir}))
	ev.next(t, StateConnected)
	run(t, byName(t, s.Tools(), "mcp__h__exit"), `{}`)
	got := ev.next(t, StateFailed)
	var attempts []int
	for _, e := range got {
		if e.State == StateReconnecting {
			attempts = append(attempts, e.Attempt)
		}
	}
	if len(attempts) != 2 || attempts[1] != 2 {
		t.Fatalf("reconnect attempts %v; want 1 and 2 before giving up (events %+v)", attempts, got)
	}
	res := run(t, byName(t, s.Tools(), "mcp__h__echo"), `{"text":"x"}`)
	if !res.IsError || res.ErrorCode != CodeDisconnected || !strings.Contains(res.Output, "after 2 reconnect attempts") {
		t.Fatalf("a call to a server given up: %+v", res)
	}
	if f := s.Failures(); len(f) != 1 || f[0].Server != "h" {
		t.Fatalf("Failures %v; want server h", f)
	}
}

// The heartbeat tells a hung server from a quiet one: a server that stops
// answering (its HTTP requests hang) is reconnected once it answers
// again.
func TestTheHeartbeatReconnectsAHungServer(t *testing.T) {
	var hung atomic.Bool
	release := make(chan struct{})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return helperServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		handler.ServeHTTP(w, r)
	}))
	// Cleanups run last first: the client closes, then the hung requests
	// are let go, then the server closes.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ev := make(events, 32)
	s := connectWith(t, Options{Heartbeat: 100 * time.Millisecond, HeartbeatTimeout: 300 * time.Millisecond,
		ReconnectBase: 5 * time.Millisecond, ConnectTimeout: time.Second, OnEvent: ev.on},
		Config{Name: "hangs", URL: srv.URL})
	ev.next(t, StateConnected)

	hung.Store(true)
	got := ev.next(t, StateReconnecting)
	if r := got[len(got)-1]; r.Err == nil || !strings.Contains(r.Err.Error(), "heartbeat") {
		t.Fatalf("reconnecting event %+v: want the heartbeat named as the reason", r)
	}
	hung.Store(false)
	ev.next(t, StateReconnected)
	if res := run(t, byName(t, s.Tools(), "mcp__hangs__echo"), `{"text":"back"}`); res.IsError || res.Output != "echo: back" {
		t.Fatalf("after the heartbeat reconnect: %+v", res)
	}
}

// A healthy server answers every heartbeat and is left alone.
func TestTheHeartbeatLeavesAHealthyServerAlone(t *testing.T) {
	healthy := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return helperServer() }, nil))
	t.Cleanup(healthy.Close)
	ev := make(events, 32)
	connectWith(t, Options{Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 10 * time.Second, OnEvent: ev.on},
		Config{Name: "fine", URL: healthy.URL})
	ev.next(t, StateConnected)
	// About twenty heartbeats, none of them a reconnect.
	ev.none(t, time.Second)
}

// Close stops a reconnect in progress and waits for it.
func TestCloseStopsAReconnect(t *testing.T) {
	ev := make(events, 16)
	s, err := Connect(context.Background(), []Config{helperConfig(t, "h", map[string]string{restartEnv: t.TempDir()})},
		Options{Dir: t.TempDir(), Heartbeat: -1, ReconnectBase: time.Hour, OnEvent: ev.on})
	if err != nil {
		t.Fatal(err)
	}
	ev.next(t, StateConnected)
	run(t, byName(t, s.Tools(), "mcp__h__exit"), `{}`)
	ev.next(t, StateReconnecting)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for an hour-long reconnect backoff")
	}
}
