package agent

import (
	"slices"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// Every model_request names the MCP servers still connecting when it was
// built, so a detector can tell "not here yet" from "does not exist"; a session with none pending records none.
func TestEveryRequestRecordsTheServersStillConnecting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending []string
	}{
		{"A server still connecting is named in every request.", []string{"notes"}},
		{"With no server pending the field is absent.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runScript(t, "clean", runOpts{cfg: func(c *Config) {
				c.Executor.Env.Registry().SetPending(func() []string { return tc.pending })
			}})
			reqs := payloads[*trajectory.ModelRequest](r.events)
			if len(reqs) == 0 {
				t.Fatal("no model_request")
			}
			for i, q := range reqs {
				if !slices.Equal(q.PendingSources, tc.pending) {
					t.Errorf("request %d: pending_sources %v, want %v", i+1, q.PendingSources, tc.pending)
				}
			}
		})
	}
}
