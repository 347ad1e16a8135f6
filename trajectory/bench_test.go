package trajectory

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
)

// BenchmarkEncode measures encoding events into lines (no I/O).
func BenchmarkEncode(b *testing.B) {
	evs := sampleSession("20261130-090000.000-0000abcd", 50)
	enc := NewEncoder(io.Discard)
	var bytesOut int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := enc.Encode(evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
		bytesOut += int64(len(enc.buf))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.SetBytes(bytesOut / int64(b.N))
}

func encodedSample(b *testing.B, turns int) []byte {
	b.Helper()
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for _, e := range sampleSession("20261130-090000.000-0000abcd", turns) {
		if err := enc.Encode(e); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BenchmarkDecode measures streaming read+decode+validate of a file.
func BenchmarkDecode(b *testing.B) {
	data := encodedSample(b, 50)
	var events int
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dec := NewDecoder(bytes.NewReader(data), "bench.jsonl")
		for {
			_, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events++
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// repeatReader yields data n times without holding more than one copy.
type repeatReader struct {
	data []byte
	n    int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	c := copy(p, r.data[r.off:])
	r.off += c
	if r.off == len(r.data) {
		r.off, r.n = 0, r.n-1
	}
	return c, nil
}

// BenchmarkDecodeMillionEvents streams a 1M-event input through the decoder
// and reports the peak heap seen, which must stay flat (constant memory).
func BenchmarkDecodeMillionEvents(b *testing.B) {
	data := encodedSample(b, 50)
	perCopy := bytes.Count(data, []byte("\n"))
	copies := 1_000_000/perCopy + 1
	total := 0
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var peak uint64
		var ms runtime.MemStats
		dec := NewDecoder(&repeatReader{data: data, n: copies}, "million.jsonl")
		events := 0
		for {
			_, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events++
			if events%100_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		total += events
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
}
