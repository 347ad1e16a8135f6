// Package collectortest proves the OTLP export against the OpenTelemetry
// Collector's own OTLP receiver. It is a module of its own so that the
// Collector's large dependency tree stays out of retrace's go.mod; run it
// with: cd otlp/collectortest && go test ./...
package collectortest

import (
	"context"
	"math"
	"net"
	"testing"

	"github.com/retrace-dev/retrace/otlp"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// startCollectorReceiver starts the OpenTelemetry Collector's own OTLP
// receiver (HTTP only) on a loopback port, delivering into a sink.
func startCollectorReceiver(t *testing.T) (string, *consumertest.TracesSink) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	sink := new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return "http://" + addr, sink
}

func TestTheCollectorsOTLPReceiverGetsEverySpanWithTheToolsDurations(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 200, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	files, err := trajectory.Expand(dir)
	if err != nil {
		t.Fatal(err)
	}
	endpoint, sink := startCollectorReceiver(t)
	url, err := otlp.TracesURL(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := otlp.Export(context.Background(), otlp.Options{Files: files, Send: (&otlp.HTTPSender{URL: url}).Send})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("export: %v %v", err, rep.Problems)
	}
	durations := map[string]int64{} // tool_use id -> ns, over the corpus
	calls := 0
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *trajectory.ToolCall:
				calls++
			case *trajectory.ToolEnd:
				durations[ev.Session+"/"+p.ToolUseID] = int64(math.Round(p.DurationMs * 1e6))
			}
		}
	}
	if sink.SpanCount() != rep.Spans || rep.Accepted != rep.Spans {
		t.Fatalf("the Collector received %d spans; %d were sent, %d accepted", sink.SpanCount(), rep.Spans, rep.Accepted)
	}
	tools := 0
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < ss.Len(); j++ {
				spans := ss.At(j).Spans()
				var session string
				for k := 0; k < spans.Len(); k++ {
					if v, ok := spans.At(k).Attributes().Get("retrace.session.id"); ok {
						session = v.Str()
					}
				}
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					if op, _ := s.Attributes().Get("gen_ai.operation.name"); op.Str() != "execute_tool" {
						continue
					}
					tools++
					id, _ := s.Attributes().Get("gen_ai.tool.call.id")
					want, ok := durations[session+"/"+id.Str()]
					got := int64(s.EndTimestamp() - s.StartTimestamp())
					if !ok || got != want || s.Kind() != ptrace.SpanKindInternal {
						t.Fatalf("tool span %s/%s: %d ns (kind %v); the tool's duration_ms is %d ns (found %v)", session, id.Str(), got, s.Kind(), want, ok)
					}
				}
			}
		}
	}
	if tools != calls || calls == 0 {
		t.Fatalf("%d tool spans arrived for %d calls", tools, calls)
	}
}
