package trajectory_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// benchCorpus is a synth corpus held in memory, one byte slice per file,
// so that the decode benchmarks measure decoding and not the disk.
var benchCorpus struct {
	once   sync.Once
	files  [][]byte
	events int
	bytes  int64
	err    error
}

// corpus returns the files of a 1000-session synth corpus (about 100k
// events), written once per test binary.
func corpus(b *testing.B) ([][]byte, int) {
	b.Helper()
	c := &benchCorpus
	c.once.Do(func() {
		dir, err := os.MkdirTemp("", "retrace-decode-bench-")
		if err != nil {
			c.err = err
			return
		}
		defer os.RemoveAll(dir)
		rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 1000, Seed: 7})
		if err != nil {
			c.err = err
			return
		}
		paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				c.err = err
				return
			}
			c.files = append(c.files, data)
			c.bytes += int64(len(data))
		}
		c.events = int(rep.Events)
	})
	if c.err != nil {
		b.Fatal(c.err)
	}
	return c.files, c.events
}

// decodeFiles decodes files on workers goroutines, each taking the next
// file, and returns the events decoded.
func decodeFiles(b *testing.B, files [][]byte, workers int, reference bool) int64 {
	var next, events atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				dec := trajectory.NewDecoder(bytes.NewReader(files[i]), "bench.jsonl")
				if reference {
					trajectory.UseReferenceDecoder(dec)
				}
				for {
					_, err := dec.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						failed.Store(err)
						return
					}
					events.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return events.Load()
}

// BenchmarkDecodeCorpus measures strict decoding of a synth corpus, on one
// core and on two, with the fast decoder and with the reference
// (encoding/json) decoder it replaced as the baseline.
func BenchmarkDecodeCorpus(b *testing.B) {
	files, _ := corpus(b)
	for _, bc := range []struct {
		name      string
		reference bool
	}{{"fast", false}, {"reference", true}} {
		for _, cores := range []int{1, 2} {
			b.Run(bc.name+"/cores="+itoa(cores), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cores))
				var events int64
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					events += decodeFiles(b, files, cores, bc.reference)
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				// On a shared machine wall time says little; the CPU time the
				// process used (GC included) says what a core does.
				b.ReportMetric(float64(events)/(cpuTime()-cpu).Seconds(), "events/cpu-s")
			})
		}
	}
}

// cpuTime returns the user and system CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func itoa(n int) string { return string(rune('0' + n)) }
