package metrics

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkCheck measures the load's check phase (every line decoded
// strictly, its seq checked, the kept lines staged and read by DuckDB as
// they are staged, then rolled back) over
// a synth corpus of about 115k events in 1000 files, on one core and on
// two, with the fast decoder and with the encoding/json decoder it replaced
// as the baseline. events/cpu-s is events over the CPU time the process
// used, which on a shared machine tells what a core does better than wall
// time.
func BenchmarkCheck(b *testing.B) {
	dir := b.TempDir()
	writeCorpus(b, dir, 1000)
	in, err := trajectory.ExpandInputs(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db, err := Open(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, decoder := range []string{"fast", "reference"} {
		for _, cores := range []int{1, 2} {
			b.Run(decoder+"/cores="+strconv.Itoa(cores), func(b *testing.B) {
				trajectory.SetReferenceDecoding(decoder == "reference")
				defer trajectory.SetReferenceDecoding(false)
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cores))
				events := 0
				cpu := cpuTime()
				for b.Loop() {
					tmp, err := os.MkdirTemp("", "retrace-check-bench-")
					if err != nil {
						b.Fatal(err)
					}
					tx, err := db.sql.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					reports, problems, err := db.checkAll(ctx, tx, in.Files, tracked{}, tmp, nil, &dupState{}, &diskUse{})
					tx.Rollback()
					os.RemoveAll(tmp)
					if err != nil || len(problems) > 0 {
						b.Fatal(err, problems)
					}
					for _, r := range reports {
						events += r.Events
					}
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
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
