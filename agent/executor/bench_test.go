package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkPipelineOverhead measures everything the executor does around a
// call whose tool does nothing: lookup, permission, validation, events
// (recorded and encoded), shaping. The budget is under 100 µs per call.
func BenchmarkPipelineOverhead(b *testing.B) {
	noop := &fakeTool{name: "noop", safe: true}
	reg, err := tools.NewRegistry(noop)
	if err != nil {
		b.Fatal(err)
	}
	env, err := tools.NewEnv(b.TempDir(), reg)
	if err != nil {
		b.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Allow: []string{"noop"}}, env.Workspace())
	if err != nil {
		b.Fatal(err)
	}
	rec := recorder.New(io.Discard, recorder.Options{})
	ex, err := New(Config{Env: env, Permission: perm, Sink: rec, Blobs: recorder.OpenBlobs(filepath.Join(b.TempDir(), "blobs"))})
	if err != nil {
		b.Fatal(err)
	}
	uses := []trajectory.ContentBlock{use("toolu_1", "noop", `{"say":"ok"}`)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ex.Execute(context.Background(), 1, uses)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

// BenchmarkPartition shows that partitioning is linear in the number of calls.
func BenchmarkPartition(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			calls := make([]*call, n)
			for i := range calls {
				calls[i] = &call{safe: i%5 != 4, rawInput: json.RawMessage(`{}`)}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				partition(calls)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/call")
		})
	}
}
