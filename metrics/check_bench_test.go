package metrics

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
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
					reports, problems, err := db.checkAll(ctx, tx, in.Files, tracked{}, tmp, nil, &dupState{}, &diskUse{}, typeTable)
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

// BenchmarkColdPhases splits the CPU time of the cold path over the
// corpus RETRACE_BENCH_EVENTS names into its phases, each the min and
// median over benchRounds runs of the process's CPU seconds, on one core:
// decode (the trajectory Decoder over every line, nothing else, with the
// collector set as a load's check sets it), check
// (every line decoded, its seq checked and staged into chunk files, as a
// load does), read (DuckDB reading those chunks into its typed tables, as
// the load's inserter does, with as many threads), and cold (a whole in-memory load and every
// named metric, on every core, for the total). Run it as
//
//	RETRACE_BENCH_EVENTS=1M RETRACE_BENCH_CORPUS=/tmp/corpus \
//	  go test -run XXX -bench BenchmarkColdPhases -benchtime 1x ./metrics/
func BenchmarkColdPhases(b *testing.B) {
	for _, size := range benchSizes(b) {
		dir, _ := benchCorpus(b, size)
		in, err := trajectory.ExpandInputs(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("events="+sizeName(size), func(b *testing.B) {
			ctx := context.Background()
			var decode, check, read, cold []float64
			for range benchRounds {
				// As checkParts does.
				moreGC := lessGC()
				cpu := cpuTime()
				events := 0
				for _, f := range in.Files {
					fh, err := os.Open(f)
					if err != nil {
						b.Fatal(err)
					}
					dec := trajectory.NewDecoder(fh, f)
					for {
						if _, err := dec.Next(); err != nil {
							if err != io.EOF {
								b.Fatal(err)
							}
							break
						}
						events++
					}
					fh.Close()
				}
				decode = append(decode, (cpuTime() - cpu).Seconds())

				db, err := Open(ctx, Options{})
				if err != nil {
					b.Fatal(err)
				}
				// Not b.TempDir: read_json takes its key=value
				// directory names for Hive partitions.
				tmp, err := os.MkdirTemp("", "retrace-phases-")
				if err != nil {
					b.Fatal(err)
				}
				ins := &inserter{chunks: make(chan chunk, 1)}
				var chunks []chunk
				collected := make(chan struct{})
				go func() {
					defer close(collected)
					for c := range ins.chunks {
						chunks = append(chunks, c)
					}
				}()
				st := &stage{dir: tmp, name: "w", ins: ins, disk: &diskUse{}}
				cpu = cpuTime()
				for i, f := range in.Files {
					info, err := os.Stat(f)
					if err != nil {
						b.Fatal(err)
					}
					if res := db.checkPart(f, part{file: i, len: info.Size()}, st, false); res.err != nil {
						b.Fatal(res.err)
					}
				}
				last, err := st.close()
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					ins.putTogether(last)
					close(ins.chunks)
				}()
				<-collected
				check = append(check, (cpuTime() - cpu).Seconds())
				moreGC()

				// As the inserter reads them.
				if _, err := db.sql.ExecContext(ctx, "SET threads = "+strconv.FormatInt(readThreads(), 10)); err != nil {
					b.Fatal(err)
				}
				cpu = cpuTime()
				for _, c := range chunks {
					q := "INSERT INTO " + typeTable(c.typ) + " SELECT * FROM read_json([" + strings.Join(quoteAll(c.paths()), ", ") + "]" +
						", format = 'newline_delimited', columns = " + columnsSQL(tableColumns(c.typ)) + ")"
					if _, err := db.sql.ExecContext(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
				read = append(read, (cpuTime() - cpu).Seconds())
				db.Close()
				os.RemoveAll(tmp)

				cpu = cpuTime()
				allMetrics(b, dir)
				cold = append(cold, (cpuTime() - cpu).Seconds())
			}
			for _, ph := range []struct {
				name string
				xs   []float64
			}{{"decode", decode}, {"check", check}, {"read", read}, {"cold", cold}} {
				lo, med := minMedian(ph.xs)
				b.ReportMetric(lo, ph.name+"-min-cpu-s")
				b.ReportMetric(med, ph.name+"-median-cpu-s")
			}
		})
	}
}
