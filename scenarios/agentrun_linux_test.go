//go:build linux

package scenarios

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/results"
)

// curlAgent is a scenario whose agent is a shell command calling the
// Messages API with curl: an agent CLI of the user's own.
const curlAgent = `-- scenario.yaml --
name: curl_agent
prompt: Say done.
agent:
  command: [sh, -c, 'curl -sS -o reply.json -H "content-type: application/json" -H "anthropic-version: 2023-06-01" -d "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"}]}" "$RETRACE_MOCK_URL/v1/messages"']
  wire: anthropic
model:
  turns:
    - expect: {last_user_contains: Say done}
      content: [{text: Done.}]
expect:
  outcome: {reason: end_turn, exit_code: 0, turns: {min: 1, max: 1}}
  files:
    - {path: reply.json, contains: Done.}
`

// withoutNamespaces makes the runs of a test see a platform that gives
// no network namespace.
func withoutNamespaces(t *testing.T) {
	t.Helper()
	prev := isolationOf
	isolationOf = func() ([]string, string) { return nil, "this test pretends the platform has none" }
	t.Cleanup(func() { isolationOf = prev })
}

// TestAnAgentWithoutANamespaceRunsWithALoudWarning checks the fallback
// where the platform gives no network namespace: the agent still runs
// against the mock on a loopback port, and both Options.Warn and the
// run's result say it ran without isolation.
func TestAnAgentWithoutANamespaceRunsWithALoudWarning(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("curl is not installed: %v", err)
	}
	withoutNamespaces(t)
	s, err := Parse([]byte(curlAgent), "curl.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warned []string
	res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1, Warn: func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Scenarios[0].Runs[0]
	if res.Scenarios[0].Verdict != results.VerdictPass {
		t.Fatalf("verdict %s (error %q, failures %+v); want a pass", res.Scenarios[0].Verdict, run.Error, run.Failures)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "WITHOUT network isolation") || !strings.Contains(warned[0], "pretends") {
		t.Fatalf("warnings %q: want one naming the missing isolation and why", warned)
	}
	if len(run.Warnings) != 1 || !strings.Contains(run.Warnings[0], "without network isolation") {
		t.Fatalf("the run's warnings %q: want the missing isolation", run.Warnings)
	}
}

// TestAnAgentThatRequiresIsolationDoesNotRunWithout checks that
// isolation: required (and Options.RequireIsolation) refuse to start the
// agent where no namespace can be had: the run has the error verdict,
// naming ErrNoIsolation.
func TestAnAgentThatRequiresIsolationDoesNotRunWithout(t *testing.T) {
	withoutNamespaces(t)
	for _, c := range []struct {
		name     string
		archive  string
		required bool
	}{
		{"isolation: required in the scenario", strings.Replace(curlAgent, "  wire: anthropic", "  wire: anthropic\n  isolation: required", 1), false},
		{"Options.RequireIsolation", curlAgent, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.archive), "curl.txtar")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1, RequireIsolation: c.required})
			if err != nil {
				t.Fatal(err)
			}
			run := res.Scenarios[0].Runs[0]
			if res.Scenarios[0].Verdict != results.VerdictError || !strings.Contains(run.Error, ErrNoIsolation.Error()) {
				t.Fatalf("verdict %s, error %q; want the error verdict for the missing namespace", res.Scenarios[0].Verdict, run.Error)
			}
		})
	}
}

// BenchmarkAgentRunIsolation measures what the network namespace costs
// one run of an agent CLI (a curl call to the mock): "loopback" runs it
// without a namespace (the baseline), "namespace" in one of its own with
// the forwarding helper. ms/run is the whole run, checks included.
func BenchmarkAgentRunIsolation(b *testing.B) {
	if _, err := exec.LookPath("curl"); err != nil {
		b.Skipf("curl is not installed: %v", err)
	}
	s, err := Parse([]byte(curlAgent), "curl.txtar")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		isolated bool
	}{{"loopback", false}, {"namespace", true}} {
		b.Run(c.name, func(b *testing.B) {
			if c.isolated {
				if args, why := isolation(); args == nil {
					b.Skipf("no network namespace here: %s", why)
				}
			} else {
				prev := isolationOf
				isolationOf = func() ([]string, string) { return nil, "the benchmark's baseline runs without one" }
				defer func() { isolationOf = prev }()
			}
			start := time.Now()
			for range b.N {
				res, err := Run(b.Context(), []*Scenario{s}, Options{Parallel: 1, RequireIsolation: c.isolated})
				if err != nil {
					b.Fatal(err)
				}
				if v := res.Scenarios[0].Verdict; v != results.VerdictPass {
					b.Fatalf("verdict %s: %+v", v, res.Scenarios[0].Runs[0])
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/run")
		})
	}
}

// TestAnAgentThatHangsIsStoppedAtTheTimeout checks that an agent CLI
// that never finishes is killed, with its process group, when the
// scenario's limits.timeout runs out, and the run says so.
func TestAnAgentThatHangsIsStoppedAtTheTimeout(t *testing.T) {
	archive := strings.Replace(curlAgent, `  command: [sh, -c, 'curl`, `  command: [sh, -c, 'echo stuck >&2; sleep 300 & sleep 300; curl`, 1)
	archive = strings.Replace(archive, "prompt: Say done.", "prompt: Say done.\nlimits: {timeout: 1s}", 1)
	s, err := Parse([]byte(archive), "hang.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Scenarios[0].Runs[0]
	if res.Scenarios[0].Verdict != results.VerdictError || !strings.Contains(run.Error, "did not finish within 1s") || !strings.Contains(run.Error, "its stderr ends: stuck") {
		t.Fatalf("verdict %s, error %q; want the error verdict naming the timeout and quoting the agent's stderr", res.Scenarios[0].Verdict, run.Error)
	}
}
