package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

const (
	validDir   = "../trajectory/testdata/valid"
	invalidDir = "../trajectory/testdata/invalid"
)

func open(t testing.TB, opts Options, paths ...string) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if len(paths) > 0 {
		if _, err := db.Load(ctx, paths...); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// rows renders a result as "a|b|c" lines so expectations read like tables.
func rows(t *testing.T, db *DB, query string) []string {
	t.Helper()
	tb, err := db.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	return renderRows(tb)
}

// renderRows writes a table's rows as "a|b|c" lines.
func renderRows(tb Table) []string {
	var out []string
	for _, r := range tb.Rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

func metricRows(t *testing.T, db *DB, name string) []string {
	t.Helper()
	q, err := MetricSQL(name)
	if err != nil {
		t.Fatal(err)
	}
	return rows(t, db, q)
}

// The expected values are counted by hand from the fixture files.
func TestMetricsOverTheValidFixturesEqualHandCountedValues(t *testing.T) {
	db := open(t, Options{}, validDir)
	pb := "20261130-091500.250-5e6f7a8b" // parallel_batch.jsonl
	pd := "20261130-093000.500-9c0d1e2f" // permission_denial.jsonl
	torn := "20261130-102000.000-0f1e2d3c"
	for _, tc := range []struct {
		name  string
		query string // or a metric name
		want  []string
	}{
		{"The funnel counts 13 calls over all fixtures: 2 denied, 9 ran (the 7 reads, a bash tool_error and a bash aborted while running), 7 successes, 6 failures and none lost.",
			"funnel", []string{"(all)|13|2|9|7|6|0", "bash|5|2|2|0|5|0", "read|7|0|7|7|0|0", "write|1|0|0|0|1|0"}},
		{"The parallel batch has four calls of which one failed with tool_error.",
			"select count(*), count(*) filter (outcome = 'failure'), string_agg(failure_kind, ',') from tool_calls where session = '" + pb + "'",
			[]string{"4|1|tool_error"}},
		{"The parallel batch's three reads ran in batch 0 and the bash call in batch 1.",
			"select tool, batch, count(*) from tool_calls where session = '" + pb + "' group by all order by batch",
			[]string{"read|0|3", "bash|1|1"}},
		{"The permission denial session has two permission_denied failures, both denied.",
			"select count(*), string_agg(DISTINCT permission, ','), string_agg(DISTINCT failure_kind, ',') from tool_calls where session = '" + pd + "'",
			[]string{"2|deny|permission_denied"}},
		{"Failure kinds keep tool_error apart, shares add up over the six failures, and of the two aborts one ran (4210 ms) and one was abandoned before it started (0 ms in a file older than not_run).",
			"failure_kinds", []string{"aborted|2|1|0.3333", "permission_denied|2|0|0.3333", "hook_blocked|1|0|0.1667", "tool_error|1|1|0.1667"}},
		{"The torn session has no session_end, so no end reason.",
			"select session, coalesce(reason, '(none)'), turns from sessions where ended is null", []string{torn + "|(none)|2"}},
		{"The hook-blocked write carries the block as its hook outcome.",
			"select tool, hook_outcome, failure_kind from tool_calls where hook_outcome = 'block'", []string{"write|block|hook_blocked"}},
		{"Two defenses triggered once each, and three enabled ones never did.",
			"select defense, triggers from (" + strings.TrimSuffix(strings.TrimSpace(mustSQL(t, "defenses")), ";") + ") where session = '(all)'",
			[]string{"denial_fuse|0", "empty_input_retry|1", "end_turn_fallthrough|1", "repeated_readonly|0", "truncated_tool_use|0"}},
		{"The permission funnel counts twelve decisions, with one prompt and two denials.",
			"select decision, count(*) from permissions group by decision order by decision",
			[]string{"allow|9", "deny|2", "prompt|1"}},
		{"The cache share divides cache reads by all input tokens.",
			"select cache_read_share from (" + strings.TrimSuffix(strings.TrimSpace(mustSQL(t, "cache")), ";") + ") where session = '" + pb + "'",
			[]string{"0.283"}},
		{"Turn 2's context is the mean of 3000, 1200, 1200, 4100, 1200 and 3000 tokens, 1083.3 more than turn 1's 1200.",
			"select turn, sessions, mean_context_tokens, p50_context_tokens, max_context_tokens, mean_output_tokens, growth_from_previous_turn from (" +
				strings.TrimSuffix(strings.TrimSpace(mustSQL(t, "tokens")), ";") + ") where turn <= 2",
			[]string{"1|7|1200|1200|1200|80|<nil>", "2|6|2283.3|2100|4100|63.3|1083.3"}},
		{"Turn 2's cache share divides its 3700 cache-read tokens by 13700 input tokens in all.",
			"cache_by_turn", []string{"1|7|8400|0|0|0", "2|6|10000|3700|0|0.2701", "3|1|1200|0|0|0"}},
		{"Five sessions ended their turn, one aborted and the torn one has no end.",
			"end_reasons", []string{"end_turn|5|0.7143|2.2", "(none)|1|0.1429|2", "aborted|1|0.1429|1"}},
		{"The reminders view holds the one empty-input reminder.",
			"select turn, kind, role, text_bytes from reminders", []string{"1|empty_input|user|85"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if strings.HasPrefix(tc.query, "select") {
				got = rows(t, db, tc.query)
			} else {
				got = metricRows(t, db, tc.query)
			}
			want := tc.want
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func mustSQL(t testing.TB, name string) string {
	t.Helper()
	q, err := MetricSQL(name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestLatencyPercentilesUseEachCallsOwnDuration(t *testing.T) {
	db := open(t, Options{}, filepath.Join(validDir, "parallel_batch.jsonl"))
	tb, err := db.Metric(context.Background(), "latency")
	if err != nil {
		t.Fatal(err)
	}
	// read ran 1.2, 18.9 and 0.4 ms in one batch: the median is 1.2, not
	// the batch mean 6.83, and p95 interpolates between 1.2 and 18.9.
	var read []any
	for _, r := range tb.Rows {
		if r[0] == "read" {
			read = r
		}
	}
	if read == nil {
		t.Fatalf("no read row in %v", tb.Rows)
	}
	p50, p95 := read[2].(float64), read[3].(float64)
	wantP95 := 1.2 + 0.9*(18.9-1.2)
	if p50 != 1.2 || p95 < wantP95-1e-9 || p95 > wantP95+1e-9 {
		t.Fatalf("read p50 = %v, p95 = %v; want 1.2 and %v", p50, p95, wantP95)
	}
}

func TestAPlantedLostCallShowsInTheFunnel(t *testing.T) {
	db := open(t, Options{}, filepath.Join(invalidDir, "lost_call.jsonl"))
	got := metricRows(t, db, "funnel")
	if total := got[0]; !strings.HasPrefix(total, "(all)|") || !strings.HasSuffix(total, "|1") {
		t.Fatalf("funnel total %q, want lost = 1 in %q", total, got)
	}
	lost := rows(t, db, "select count(*) from tool_calls where outcome = 'lost'")
	if lost[0] != "1" {
		t.Fatalf("lost calls = %s, want 1", lost[0])
	}
}

func TestMalformedLines(t *testing.T) {
	bad := filepath.Join(invalidDir, "malformed_json.jsonl")
	ctx := context.Background()
	t.Run("A strict load fails naming file:line and loads nothing of the file.", func(t *testing.T) {
		db := open(t, Options{})
		_, err := db.Load(ctx, validDir, bad)
		var le *trajectory.LineError
		if !errors.As(err, &le) || le.File != bad || le.Line != 5 {
			t.Fatalf("err = %v, want a LineError at %s:5", err, bad)
		}
		if !strings.Contains(err.Error(), bad+":5:") {
			t.Fatalf("message %q does not name %s:5", err, bad)
		}
		if got := rows(t, db, "select count(*) from events where file = '"+bad+"'"); got[0] != "0" {
			t.Fatalf("%s events of the bad file were loaded", got[0])
		}
	})
	t.Run("Every bad file is named, not only the first, and nothing at all is loaded.", func(t *testing.T) {
		db := open(t, Options{})
		other := filepath.Join(invalidDir, "unknown_field.jsonl")
		_, err := db.Load(ctx, bad, validDir, other)
		var loadErr *LoadError
		if !errors.As(err, &loadErr) || len(loadErr.Problems) != 2 {
			t.Fatalf("err = %v, want a LoadError with two problems", err)
		}
		for _, f := range []string{bad + ":5:", other + ":"} {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("message %q does not name %s", err, f)
			}
		}
		if got := rows(t, db, "select count(*) from events"); got[0] != "0" {
			t.Fatalf("%s events were loaded from a refused load", got[0])
		}
	})
	t.Run("Invalid UTF-8 the decoder accepts is loaded as U+FFFD, not refused by DuckDB.", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "utf8.jsonl")
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), "careful", "care\xfful", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		db := open(t, Options{})
		if rep, err := db.Load(ctx, p); err != nil || rep.Events != 11 {
			t.Fatalf("report %+v, err %v; want 11 events", rep, err)
		}
	})
	t.Run("Binary data fails even a lenient load, since the lines after it go unchecked.", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "bin.jsonl")
		if err := os.WriteFile(p, []byte("{\"v\":1}\n\x00\x01\x02\n{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		db := open(t, Options{Lenient: true})
		if _, err := db.Load(ctx, p); !errors.Is(err, trajectory.ErrBinary) {
			t.Fatalf("err = %v, want ErrBinary", err)
		}
	})
	t.Run("A lenient load skips the bad line, counts it, and loads the rest.", func(t *testing.T) {
		db := open(t, Options{Lenient: true})
		rep, err := db.Load(ctx, bad)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Skipped() != 1 || rep.Files[0].Skipped != 1 || rep.Events != 10 {
			t.Fatalf("report %+v, want 1 skipped and 10 events", rep)
		}
	})
}

func TestLoadingAFileTwiceReplacesIt(t *testing.T) {
	db := open(t, Options{Path: filepath.Join(t.TempDir(), "m.duckdb")}, filepath.Join(validDir, "basic.jsonl"))
	if _, err := db.Load(context.Background(), filepath.Join(validDir, "basic.jsonl")); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db, "select count(*) from events"); got[0] != "11" {
		t.Fatalf("events = %s, want 11", got[0])
	}
}

func TestBadSQLReportsDuckDBsMessageWithThePosition(t *testing.T) {
	db := open(t, Options{})
	_, err := db.Query(context.Background(), "select count(* from tool_calls")
	if err == nil || !strings.Contains(err.Error(), "LINE 1") {
		t.Fatalf("err = %v, want DuckDB's syntax error with its position", err)
	}
	if _, err := db.Metric(context.Background(), "nope"); !errors.Is(err, ErrUnknownMetric) {
		t.Fatalf("err = %v, want ErrUnknownMetric", err)
	}
}

// FuzzLenientLoad checks that whatever lines the trajectory Decoder accepts,
// DuckDB reads with the generated schema: the two must never disagree. An
// exec loads into DuckDB and runs every metric (a few per second), so run
// it with -fuzzminimizetime 10x: minimizing a found input with the default
// 60 s per input otherwise looks like a hang.
func FuzzLenientLoad(f *testing.F) {
	for _, p := range []string{"basic.jsonl", "defenses.jsonl", "torn_last_line.jsonl"} {
		b, err := os.ReadFile(filepath.Join(validDir, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	db := open(f, Options{Lenient: true})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := db.Load(context.Background(), p)
		if errors.Is(err, trajectory.ErrBinary) {
			return
		}
		if err != nil {
			t.Fatalf("lenient load failed: %v", err)
		}
		for _, m := range Metrics() {
			if _, err := db.Metric(context.Background(), m); err != nil {
				t.Fatalf("metric %s: %v", m, err)
			}
		}
	})
}

// sampleHeap samples the Go heap until the returned function is called,
// which returns the highest HeapInuse seen.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// BenchmarkLoadVersusReadJSON times Load (the Decoder check of every line,
// then read_json) against DuckDB's own read_json of the same files into a
// table with the same columns; ratio is Load's time over read_json's. The
// corpus of about a million events is read as one file per session and as
// one file holding them all.
func BenchmarkLoadVersusReadJSON(b *testing.B) {
	dir := b.TempDir()
	events := writeCorpus(b, filepath.Join(dir, "sessions"), corpusSessions)
	one := filepath.Join(dir, "one", "all.jsonl")
	concat(b, filepath.Join(dir, "sessions"), one)
	for _, tc := range []struct{ name, path, glob string }{
		{"files=sessions", filepath.Join(dir, "sessions"), filepath.Join(dir, "sessions", "*.jsonl")},
		{"files=1", one, one},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			var load, direct time.Duration
			for i := 0; i < b.N; i++ {
				db, err := Open(ctx, Options{})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := db.Load(ctx, tc.path); err != nil {
					b.Fatal(err)
				}
				load += time.Since(start)
				db.Close()

				db, err = Open(ctx, Options{})
				if err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				q := "CREATE TABLE direct AS SELECT * FROM read_json(" + quoteString(tc.glob) +
					", format = 'newline_delimited', filename = true, columns = " + columnsSQL(Columns()) + ")"
				if _, err := db.sql.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
				direct += time.Since(start)
				db.Close()
			}
			b.ReportMetric(float64(events*b.N)/load.Seconds(), "load-events/s")
			b.ReportMetric(float64(events*b.N)/direct.Seconds(), "read_json-events/s")
			b.ReportMetric(load.Seconds()/direct.Seconds(), "ratio")
		})
	}
}

// concat writes every file of dir, one after the other, to out.
func concat(b *testing.B, dir, out string) {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		b.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, data...)
	}
	if err := os.WriteFile(out, all, 0o644); err != nil {
		b.Fatal(err)
	}
}

func duckDBMemory(b *testing.B, db *DB) float64 {
	b.Helper()
	var n float64
	if err := db.sql.QueryRow("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// corpusSessions is the size of the benchmark corpus: about a million
// events of the synth package's realistic sessions.
const corpusSessions = 10000

// writeCorpus writes a synthetic corpus of sessions files to dir and
// returns its number of events.
func writeCorpus(b testing.TB, dir string, sessions int) int {
	b.Helper()
	rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: sessions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return int(rep.Events)
}

// A call whose tool_end says duration_unknown (an imported or wire-seen
// call: the source did not measure it) has no duration in tool_calls, so
// latency leaves it out instead of counting a 0 ms call.
func TestAnUnmeasuredDurationIsNoZeroMillisecondCall(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(validDir, "parallel_batch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The first read's tool_end becomes an unmeasured one.
	old := `"duration_ms":1.2,`
	if !strings.Contains(string(src), old) {
		t.Fatalf("the fixture has no %s", old)
	}
	file := filepath.Join(t.TempDir(), "unmeasured.jsonl")
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), old, `"duration_ms":0,"duration_unknown":true,`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := open(t, Options{}, file)
	got := rows(t, db, "select count(*), count(duration_ms), min(duration_ms) from tool_calls where tool = 'read'")
	if got[0] != "3|2|0.4" {
		t.Errorf("read calls|with duration|min = %s, want 3|2|0.4", got[0])
	}
}

// The output size, truncation and parallelism metrics over the valid
// fixtures, and over a copy of the parallel batch whose bash call was
// cancelled by a failing sibling and one of whose reads was truncated and
// spilled. The expected values are counted by hand.
func TestOutputTruncationAndParallelismMetrics(t *testing.T) {
	db := open(t, Options{}, validDir)
	for _, tc := range []struct {
		name, metric string
		want         []string
	}{
		// Of the 13 calls with a tool_end, 4 never ran (two denied bash
		// calls, an aborted one, a write a hook blocked): their
		// output_bytes 0 is no output of the tool, so they are no sample
		// (counted, bash's p50 would read 0 bytes, and write would have
		// outputs without ever running).
		{"Output sizes per tool, over the 9 calls that ran: bash returned 96 and 1500 bytes, read 40 to 812.",
			"output_sizes", []string{"(all)|9|300|1224.8|1500", "bash|2|798|1429.8|1500", "read|7|300|812|812"}},
		{"No fixture truncates, so every share is 0 of the 9 calls that ran.",
			"truncation", []string{"(all)|9|0|0|0|0", "bash|2|0|0|0|0", "read|7|0|0|0|0"}},
		{"Eleven batches hold 13 calls; the one of three reads is the only parallel batch.",
			"parallelism", []string{"11|13|1.18|3|1|3|0.2308|0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := metricRows(t, db, tc.metric); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("%s = %v, want %v", tc.metric, got, tc.want)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(validDir, "parallel_batch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"failure_kind":"tool_error","error_code":"exit:1"`, `"failure_kind":"aborted","error_code":"sibling_failed"`, 1)
	s = strings.Replace(s, `"tool_use_id":"toolu_13","tool":"read","duration_ms":0.4,"output_bytes":300}`,
		`"tool_use_id":"toolu_13","tool":"read","duration_ms":0.4,"output_bytes":300,"truncated":true,"spill":"sha256:`+strings.Repeat("ab", 32)+`"}`, 1)
	file := filepath.Join(t.TempDir(), "cascade.jsonl")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	db = open(t, Options{}, file)
	if got := metricRows(t, db, "parallelism"); got[0] != "2|4|2|3|1|3|0.75|1" {
		t.Fatalf("parallelism = %v, want 2 batches, 3 of 4 calls in the parallel one, 1 cascade cancellation", got)
	}
	if got := metricRows(t, db, "truncation"); strings.Join(got, ",") != "(all)|4|1|0.25|1|0.25,bash|1|0|0|0|0,read|3|1|0.3333|1|0.3333" {
		t.Fatalf("truncation = %v, want one read of three truncated and spilled", got)
	}
}
