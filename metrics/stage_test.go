package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// Every row the load makes equals the row DuckDB's own read_json makes of
// the same line of the original file with the same column types, value for
// value, whatever way the load hands the lines to DuckDB: JSON values
// (normalised numbers, escapes, key spacing), timestamps and strings read
// the same. The corpus is the valid fixtures, a synth corpus, and a line
// respelled with escapes, blanks, an exponent, a timestamp offset and
// nanoseconds: the timestamps load as the UTC instants they name, to the
// microsecond (DuckDB reads a TIMESTAMP as if its offset were not there,
// so the load reads them as TIMESTAMPTZ).
func TestLoadedRowsEqualReadJSON(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), filepath.Join(dir, "synth"), synth.Options{Sessions: 30, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(validDir, "parallel_batch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	odd := strings.Replace(string(src), `"duration_ms":1.2,`, `"duration_ms" : 12e-1 ,`, 1)
	odd = strings.Replace(odd, `"tool":"read"`, `"tool":"r\u0065ad"`, 1)
	odd = strings.Replace(odd, `"input":{"file_path":"main.go"}`, `"input":{ "file_path" : "m\u0061in.go", "n": 1.50 }`, 1)
	odd = strings.Replace(odd, `Z"`, `+02:00"`, 1)
	// A surrogate pair (a lone one read_json refuses: see
	// TestALoneSurrogateLoadsAsTheDecoderReadsIt).
	odd = strings.Replace(odd, `"file_path":"go.mod"`, `"file_path":"go\ud83d\ude00.mod"`, 1)
	// DuckDB keeps microseconds, dropping the rest.
	odd = strings.Replace(odd, `.021000000Z"`, `.021999999Z"`, 1)
	// Its own session, or the load would leave it out as a copy.
	odd = strings.ReplaceAll(odd, `"session":"20261130-091500.250-5e6f7a8b"`, `"session":"20261130-091500.250-0dd0dd00"`)
	if odd == string(src) {
		t.Fatal("the fixture changed; respell another line")
	}
	if err := os.WriteFile(filepath.Join(dir, "odd.jsonl"), []byte(odd), 0o644); err != nil {
		t.Fatal(err)
	}
	// The valid fixtures but the torn last line, which read_json refuses
	// and the load leaves out with a warning.
	fixtures, err := filepath.Glob(filepath.Join(validDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if strings.Contains(f, "torn") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "valid-"+filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := open(t, Options{}, dir)
	sameAsReadJSON(t, db, dir)
	// Beyond agreeing with read_json: the instants the lines name.
	got := rows(t, db, "SELECT seq, ts FROM raw_events WHERE session = '20261130-091500.250-0dd0dd00' AND seq IN (1, 3) ORDER BY seq")
	want := []string{"1|2026-11-30 07:00:00.007 +0000 UTC", "3|2026-11-30 09:00:00.021999 +0000 UTC"}
	if !slices.Equal(got, want) {
		t.Errorf("ts of 09:00:00.007+02:00 and 09:00:00.021999999Z loaded as %q, want %q", got, want)
	}
}

// sameAsReadJSON fails t unless the rows db holds are those DuckDB's own
// read_json makes of the trajectories below dir, each with its file and
// line.
func sameAsReadJSON(t *testing.T, db *DB, dir string) {
	t.Helper()
	var cols, read []string
	spec := Columns()
	for i, c := range spec {
		cols = append(cols, quoteIdent(c.Name))
		read = append(read, quoteIdent(c.Name))
		if c.Type == "TIMESTAMP" {
			// With its offset, made UTC: the instant the event names.
			spec[i].Type = "TIMESTAMPTZ"
			read[i] = "timezone('UTC', " + read[i] + ")"
		}
	}
	sel := strings.Join(cols, ", ")
	glob := filepath.Join(dir, "**", "*.jsonl")
	direct := "SELECT " + strings.Join(read, ", ") + " FROM read_json(" + quoteString(glob) + ", format = 'newline_delimited', columns = " + columnsSQL(spec) + ")"
	for _, q := range []struct{ name, sql string }{
		{"loaded, not read_json's", "SELECT " + sel + " FROM raw_events EXCEPT ALL " + direct},
		{"read_json's, not loaded", direct + " EXCEPT ALL SELECT " + sel + " FROM raw_events"},
	} {
		if got := rows(t, db, "SELECT * FROM ("+q.sql+") LIMIT 3"); len(got) > 0 {
			t.Errorf("rows %s (3 at most):\n%s", q.name, strings.Join(got, "\n"))
		}
	}
	if got := rows(t, db, "SELECT count(*) FROM raw_events"); got[0] == "0" {
		t.Fatal("nothing loaded")
	}
	if got := rows(t, db, "SELECT count(*) FROM raw_events WHERE line IS NULL OR line < 1 OR file IS NULL"); got[0] != "0" {
		t.Errorf("%s rows without file or line", got[0])
	}
}

// With a stage budget far below the corpus, the chunks are read into
// DuckDB and deleted while the check goes on: the most staged on disk at
// once stays within the bound Progress.StagedPeak documents, far below
// all the staged lines, the temporary directory is empty afterwards, and
// the rows are the same. With the default budget the same corpus is read
// after its check, all of it staged at once.
func TestStagingIsBoundedWhileTheCheckGoesOn(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 60, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		budget  int64
		bounded bool
	}{
		{"A 16 KiB budget reads chunks as the check goes on.", 16 << 10, true},
		{"The default budget reads them after the check.", stageBudget, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(b int64) { stageBudget = b }(stageBudget)
			stageBudget = tc.budget
			tmp := t.TempDir()
			var peak, staged int64
			db := open(t, Options{TempDir: tmp, Progress: func(p Progress) {
				peak = max(peak, p.StagedPeak)
				if p.Phase == "load" {
					staged = p.Total
				}
			}}, dir)
			sameAsReadJSON(t, db, dir)
			// A chunk closes at the budget plus one line (a few KiB here).
			bound := int64(2*runtime.GOMAXPROCS(0)+2) * (tc.budget + 64<<10)
			switch {
			case staged == 0 || peak == 0:
				t.Fatalf("staged %d bytes, peak %d: want both reported", staged, peak)
			case tc.bounded && (peak > bound || peak*4 > staged):
				t.Errorf("peak %d bytes on disk of %d staged, want at most %d and under a quarter", peak, staged, bound)
			case !tc.bounded && peak*2 < staged:
				// The first worker done hands its chunks over while the
				// other is still checking, so a little less than all.
				t.Errorf("peak %d bytes on disk of %d staged, want about all of them at once", peak, staged)
			}
			left, err := os.ReadDir(tmp)
			if err != nil || len(left) != 0 {
				t.Errorf("the temporary directory holds %d entries after the load (%v), want none", len(left), err)
			}
		})
	}
}

// A memory limit DuckDB does not take is refused with ErrMemoryLimit; one
// it takes is DuckDB's memory_limit, with the spill directory given. A load
// of more input than bigLoadBytes into memory caps DuckDB at boundedMemory
// and spills to a directory of its own, removed by Close; a smaller one
// leaves DuckDB's default alone. A store is capped from its Open.
func TestMemoryLimit(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, Options{MemoryLimit: "lots"}); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("Open with memory limit \"lots\" = %v, want ErrMemoryLimit", err)
	}
	spill := t.TempDir()
	db := open(t, Options{MemoryLimit: "300MB", TempDir: spill})
	if got := rows(t, db, "SELECT current_setting('memory_limit'), current_setting('temp_directory')"); got[0] != "286.1 MiB|"+spill {
		t.Errorf("memory_limit|temp_directory = %s, want 286.1 MiB|%s", got[0], spill)
	}
	limit := func(db *DB) string { return rows(t, db, "SELECT current_setting('memory_limit')")[0] }
	small := open(t, Options{}, validDir)
	def := limit(open(t, Options{}))
	if got := limit(small); got != def {
		t.Errorf("a small load set memory_limit to %s, want the default %s", got, def)
	}
	defer func(n int64) { bigLoadBytes = n }(bigLoadBytes)
	bigLoadBytes = 1 << 10
	big := open(t, Options{}, validDir)
	if got := limit(big); got != "476.8 MiB" {
		t.Errorf("a big load set memory_limit to %s, want 476.8 MiB (500MB)", got)
	}
	if got := limit(open(t, Options{Path: filepath.Join(t.TempDir(), "s.duckdb")})); got != "476.8 MiB" {
		t.Errorf("a store opened with memory_limit %s, want 476.8 MiB (500MB)", got)
	}
	if big.spill == nil {
		t.Fatal("a big load spills to no directory of its own")
	}
	dir := big.spill.Path
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		t.Fatalf("a big load spills to %q (%v), want a directory of its own", dir, err)
	}
	big.Close()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left the spill directory %s (%v)", dir, err)
	}
	if got := limit(open(t, Options{MemoryLimit: "2GB"}, validDir)); got != "1.8 GiB" {
		t.Errorf("a big load with its own limit set memory_limit to %s, want 1.8 GiB (2GB)", got)
	}
}

// A strict load refused for a bad line in its second file loads nothing:
// the rows of the first file, inserted while the second was being
// checked, are rolled back with the load's transaction.
func TestARefusedLoadLeavesNoRows(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(validDir, "parallel_batch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(`{"v":1,"nonsense":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := open(t, Options{})
	_, err = db.Load(context.Background(), dir)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("load = %v, want a *LoadError", err)
	}
	if got := rows(t, db, "SELECT count(*) FROM raw_events"); got[0] != "0" {
		t.Fatalf("%s rows left by a refused load, want 0", got[0])
	}
	if _, err := db.Load(context.Background(), filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db, "SELECT count(*) = count(DISTINCT seq) FROM raw_events"); got[0] != "true" {
		t.Fatal("the load after a refused one holds a row twice")
	}
}

// A lone surrogate escape, which DuckDB's read_json refuses, loads as the
// Decoder reads it, U+FFFD, and the rest of its line as it is.
func TestALoneSurrogateLoadsAsTheDecoderReadsIt(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(validDir, "parallel_batch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Lone high, escaped backslash (text, not an escape), pair, lone low.
	odd := strings.Replace(string(src), `"tool":"read"`, `"tool":"re\ud800a\\ud800d\ud83d\ude00\udc00"`, 1)
	if odd == string(src) {
		t.Fatal("the fixture changed; respell another line")
	}
	file := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(file, []byte(odd), 0o644); err != nil {
		t.Fatal(err)
	}
	db := open(t, Options{}, file)
	got := rows(t, db, "SELECT tool, count(*) FROM raw_events WHERE tool LIKE 're%' GROUP BY tool ORDER BY tool")
	want := []string{"read|" + fmt.Sprint(strings.Count(odd, `"tool":"read"`)), "re\uFFFDa\\ud800d\U0001F600\uFFFD|1"}
	if !slices.Equal(got, want) {
		t.Errorf("tools %q, want %q", got, want)
	}
}

// fixSurrogates changes no JSON string's text as encoding/json reads it
// (which is how the Decoder reads it), and leaves no lone surrogate for
// DuckDB to refuse.
func FuzzFixSurrogates(f *testing.F) {
	for _, s := range []string{`a`, `\ud800`, `\udc00x`, `\ud83d\ude00`, `\\ud800`, `\ud800\ud800\udc00`, `\u12`, `\ud800\u`, `\"\ud800`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := []byte(`"` + s + `"`)
		var want string
		if json.Unmarshal(in, &want) != nil {
			return
		}
		out := fixSurrogates(in)
		var got string
		if err := json.Unmarshal(out, &got); err != nil || got != want {
			t.Fatalf("%s became %s: %q (%v), want %q", in, out, got, err, want)
		}
		for i := 0; i+5 < len(out); i++ {
			if out[i] == '\\' && out[i+1] != 'u' {
				i++
				continue
			}
			if out[i] == '\\' {
				r, _ := hex4(out[i+2:])
				if 0xDC00 <= r && r <= 0xDFFF {
					t.Fatalf("%s became %s, a lone low surrogate at %d", in, out, i)
				}
				if 0xD800 <= r && r < 0xDC00 {
					r2, _ := hex4(out[min(i+8, len(out)):])
					if i+12 > len(out) || out[i+6] != '\\' || r2 < 0xDC00 || r2 > 0xDFFF {
						t.Fatalf("%s became %s, a lone high surrogate at %d", in, out, i)
					}
					i += 6
				}
				i += 5
			}
		}
	})
}
