package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
	"google.golang.org/protobuf/proto"
)

// BenchmarkExport measures export throughput over a synth corpus, in spans
// and events per second, beside its baseline measured in the same run: the
// JSONL decode alone (trajectory.ReadFile of every file), which every
// export pays first.
//
//	go test -run XXX -bench Export -benchtime 5x ./otlp/
func BenchmarkExport(b *testing.B) {
	files := synthCorpus(b, 300)
	var events, spans int
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		events += len(evs)
		_, c, _ := SessionSpans(evs)
		spans += c.Spans
	}
	report := func(b *testing.B) {
		sec := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(spans)/sec, "spans/s")
		b.ReportMetric(float64(events)/sec, "events/s")
	}
	b.Run("baseline=decode_jsonl", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				if _, err := trajectory.ReadFile(f); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("protobuf", func(b *testing.B) {
		send := func(_ context.Context, batch []ResourceSpans) (int, error) {
			req, n, err := ToProto(batch)
			if err != nil {
				return 0, err
			}
			_, err = proto.Marshal(req)
			return n, err
		}
		for b.Loop() {
			if _, err := Export(context.Background(), Options{Files: files, Send: send}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("otlp_json", func(b *testing.B) {
		fw := &FileWriter{W: io.Discard}
		for b.Loop() {
			if _, err := Export(context.Background(), Options{Files: files, Send: fw.Send}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("http_loopback", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
		}))
		defer srv.Close()
		s := &HTTPSender{URL: srv.URL + "/v1/traces"}
		for b.Loop() {
			if _, err := Export(context.Background(), Options{Files: files, Send: s.Send}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}
