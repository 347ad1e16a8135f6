package executor

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// stampTool records when its Run begins: the moment the call is running.
type stampTool struct{ at chan time.Time }

func (s *stampTool) Spec() tools.Spec {
	return tools.Spec{Name: "stamp", Description: "A test tool that records when it starts.", Schema: tools.SchemaFor[fakeInput](),
		ReadOnly: true, Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}
func (s *stampTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (s *stampTool) Run(context.Context, *tools.Env, json.RawMessage) (tools.Result, error) {
	s.at <- time.Now()
	return tools.Result{Output: "ok"}, nil
}

func benchExecutor(b *testing.B, tool tools.Tool) *Executor {
	b.Helper()
	reg, err := tools.NewRegistry(tool)
	if err != nil {
		b.Fatal(err)
	}
	env, err := tools.NewEnv(b.TempDir(), reg)
	if err != nil {
		b.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Allow: []string{tool.Spec().Name}}, env.Workspace())
	if err != nil {
		b.Fatal(err)
	}
	ex, err := New(Config{Env: env, Permission: perm, Sink: recorder.New(io.Discard, recorder.Options{}), Blobs: recorder.OpenBlobs(filepath.Join(b.TempDir(), "blobs"))})
	if err != nil {
		b.Fatal(err)
	}
	return ex
}

// BenchmarkStreamStartLatency measures the time from a tool_use block
// handed to the scheduler (the provider has just seen it complete) to
// the tool's Run starting, through hooks-less permission, validation and
// the events: the budget is under 1 ms. It reports the mean and the p99.
func BenchmarkStreamStartLatency(b *testing.B) {
	tool := &stampTool{at: make(chan time.Time, 1)}
	ex := benchExecutor(b, tool)
	u := use("toolu_1", "stamp", `{"say":"ok"}`)
	var lat []time.Duration
	for b.Loop() {
		st := ex.NewStream(context.Background(), 1, time.Now())
		offered := time.Now()
		st.Offer(u)
		lat = append(lat, (<-tool.at).Sub(offered))
		st.Received()
		st.Collect([]trajectory.ContentBlock{u})
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(float64(sum.Microseconds())/float64(len(lat)), "µs/start")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs/start")
}

// BenchmarkStreamPipelineOverhead is BenchmarkPipelineOverhead with
// streaming on: one no-op call offered, received and collected through
// the scheduler, against the same call through Execute in the same run
// (batch-µs/call), with their ratio. The budget is under 100 µs a call.
func BenchmarkStreamPipelineOverhead(b *testing.B) {
	ex := benchExecutor(b, &fakeTool{name: "noop", safe: true})
	uses := []trajectory.ContentBlock{use("toolu_1", "noop", `{"say":"ok"}`)}
	var streamed, batched time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		st := ex.NewStream(context.Background(), 1, t0)
		st.Offer(uses[0])
		st.Received()
		st.Collect(uses)
		t1 := time.Now()
		ex.Execute(context.Background(), 1, uses)
		streamed += t1.Sub(t0)
		batched += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(streamed.Nanoseconds())/n/1e3, "µs/call")
	b.ReportMetric(float64(batched.Nanoseconds())/n/1e3, "batch-µs/call")
	b.ReportMetric(float64(streamed)/float64(batched), "stream/batch")
}
