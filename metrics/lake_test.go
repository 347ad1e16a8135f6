package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// lakeViews are the views a lake read in place must answer exactly as the
// trajectories do, each ordered so that the rows compare one by one.
var lakeViews = map[string]string{
	"events":      "select * from events order by session, seq",
	"tool_calls":  "select * from tool_calls order by session, seq",
	"model_turns": "select * from model_turns order by session, turn, context_tokens, output_tokens",
	"sessions":    "select * from sessions order by session",
	"defenses":    "select * from defenses order by session, turn, defense, tool_use_id",
	"permissions": "select * from permissions order by session, turn, tool_use_id, decision",
	"reminders":   "select * from reminders order by session, turn, kind, dedup_key",
}

// exportedCorpus loads the fixtures and a synth corpus, exports them to a
// lake, and returns the database and the lake's directory.
func exportedCorpus(t *testing.T) (*DB, string) {
	t.Helper()
	return exportedCorpusInParts(t, exportPartEvents)
}

// exportedCorpusInParts is exportedCorpus with an export that writes parts
// of about part events (exportPartEvents).
func exportedCorpusInParts(t *testing.T, part int64) (*DB, string) {
	t.Helper()
	defer func(n int64) { exportPartEvents = n }(exportPartEvents)
	exportPartEvents = part
	ctx := context.Background()
	corpus := filepath.Join(t.TempDir(), "synth")
	if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 40, Seed: 3, Days: 3}); err != nil {
		t.Fatal(err)
	}
	src := open(t, Options{}, validDir, filepath.Join(invalidDir, "lost_call.jsonl"), corpus)
	dir := filepath.Join(t.TempDir(), "lake")
	if _, err := src.ExportParquet(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	return src, dir
}

func TestALakeIsReadInPlaceWithTheSameRowsAsTheTrajectories(t *testing.T) {
	t.Run("An export of one part.", func(t *testing.T) {
		src, dir := exportedCorpus(t)
		sameRowsOverTheLake(t, src, dir)
	})
	t.Run("An export in parts, several files of a type in each partition.", func(t *testing.T) {
		src, dir := exportedCorpusInParts(t, 300)
		files, err := filepath.Glob(filepath.Join(dir, "date=*", "tool_call_1"+ParquetExt))
		if err != nil || len(files) == 0 {
			t.Fatalf("no partition of %s has a second tool_call file (%v); the parts are not tested", dir, err)
		}
		sameRowsOverTheLake(t, src, dir)
	})
}

// sameRowsOverTheLake checks that the lake in dir, read in place, gives
// every view and named metric the rows src gives.
func sameRowsOverTheLake(t *testing.T, src *DB, dir string) {
	t.Helper()
	ctx := context.Background()
	lake := open(t, Options{}, dir)
	// Read in place: the tables hold nothing; every raw table is a
	// temporary view over read_parquet.
	var copied int64
	for _, typ := range trajectory.EventTypes() {
		var n int64
		if err := lake.sql.QueryRowContext(ctx, "SELECT count(*) FROM memory.main."+typeTable(typ)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		copied += n
	}
	if copied != 0 {
		t.Errorf("the load copied %d rows of the lake into tables; it should read them in place", copied)
	}
	var views int
	if err := lake.sql.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name LIKE 'raw_%' AND sql LIKE '%read_parquet%'").Scan(&views); err != nil {
		t.Fatal(err)
	}
	if views == 0 {
		t.Error("no raw table is a view over read_parquet")
	}
	queries := map[string]string{}
	for name, q := range lakeViews {
		queries["view "+name] = q
	}
	for _, m := range Metrics() {
		queries["metric "+m] = mustSQL(t, m)
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			want, err := src.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := lake.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Rows) == 0 && name != "view reminders" {
				t.Fatalf("%s has no rows over the corpus; the comparison would prove nothing", name)
			}
			if !reflect.DeepEqual(got.Columns, want.Columns) {
				t.Fatalf("columns over the lake %v, over the trajectories %v", got.Columns, want.Columns)
			}
			if len(got.Rows) != len(want.Rows) {
				t.Fatalf("%d rows over the lake, %d over the trajectories", len(got.Rows), len(want.Rows))
			}
			for i := range want.Rows {
				if !reflect.DeepEqual(got.Rows[i], want.Rows[i]) {
					t.Fatalf("row %d over the lake\n%v\nover the trajectories\n%v", i, got.Rows[i], want.Rows[i])
				}
			}
		})
	}
	// The named metrics through Metric (prepared, over the derived
	// tables) too.
	for _, m := range Metrics() {
		want, err := src.Metric(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lake.Metric(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("metric %s over the lake\n%v\nover the trajectories\n%v", m, got.Rows, want.Rows)
		}
	}
}

func TestALoadAfterALakeKeepsTheLakesRows(t *testing.T) {
	ctx := context.Background()
	src, dir := exportedCorpus(t)
	db := open(t, Options{}, dir)
	before := rows(t, db, "select count(*) from events")[0]
	// The fixture basic.jsonl is in the lake already: loading it again
	// replaces its rows; a new file adds its own.
	extra := filepath.Join(t.TempDir(), "more")
	if _, err := synth.Write(ctx, extra, synth.Options{Sessions: 2, Seed: 99}); err != nil {
		t.Fatal(err)
	}
	rep, err := db.Load(ctx, extra)
	if err != nil {
		t.Fatal(err)
	}
	after := rows(t, db, "select count(*) from events")[0]
	if want := fmt.Sprint(atoi(t, before) + rep.Events); after != want {
		t.Fatalf("events after loading %d more = %s, want %s", rep.Events, after, want)
	}
	want := rows(t, src, "select count(*) from tool_calls")[0]
	if got := rows(t, db, "select count(*) from tool_calls where file not like '%more%'")[0]; got != want {
		t.Fatalf("tool_calls of the lake = %s after the second load, want %s", got, want)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAnExportIsLaidOutForPruning(t *testing.T) {
	ctx := context.Background()
	src, dir := exportedCorpus(t)
	t.Run("lake.json names the version, the partitioning and every column.", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(dir, LakeManifest))
		if err != nil {
			t.Fatal(err)
		}
		var l Lake
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		if l.Format != "retrace-lake" || l.Version != LakeVersion || !reflect.DeepEqual(l.PartitionBy, []string{"date"}) {
			t.Fatalf("lake.json = %+v", l)
		}
		if len(l.Columns) != len(Columns())+len(where()) {
			t.Fatalf("lake.json lists %d columns, want %d", len(l.Columns), len(Columns())+len(where()))
		}
	})
	files, err := filepath.Glob(filepath.Join(dir, "date=*", "*"+ParquetExt))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Parquet files in %s: %v", dir, err)
	}
	t.Run("Each file holds one event type, the one its name says.", func(t *testing.T) {
		for _, f := range files {
			typ, ok := lakeFileType(filepath.Base(f))
			if !ok {
				t.Fatalf("%s is not named for an event type", f)
			}
			got := rows(t, src, "select string_agg(distinct type, ',') from read_parquet("+quoteString(f)+")")
			if got[0] != string(typ) {
				t.Errorf("%s holds %s, want only %s", f, got[0], typ)
			}
		}
	})
	t.Run("Each file's row groups are ordered by session, so a session's events are in few of them.", func(t *testing.T) {
		// Small row groups (DuckDB writes 2,048 rows at least), and a day
		// of enough sessions that the files have several.
		defer func(n int) { exportRowGroupSize = n }(exportRowGroupSize)
		exportRowGroupSize = 2048
		corpus := filepath.Join(t.TempDir(), "day")
		if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 300, Seed: 5, Days: 1}); err != nil {
			t.Fatal(err)
		}
		src := open(t, Options{}, corpus)
		small := filepath.Join(t.TempDir(), "small")
		if _, err := src.ExportParquet(ctx, small, false); err != nil {
			t.Fatal(err)
		}
		q := "select file_name, row_group_id, stats_min, stats_max from parquet_metadata(" +
			quoteString(filepath.Join(small, "date=*", "tool_call_*"+ParquetExt)) +
			") where path_in_schema = 'session' order by file_name, row_group_id"
		tab, err := src.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		groups := 0
		for i, r := range tab.Rows {
			if i > 0 && tab.Rows[i-1][0] == r[0] {
				groups++
				if fmt.Sprint(tab.Rows[i-1][3]) > fmt.Sprint(r[2]) {
					t.Errorf("%s: row group %v starts at session %v before the one before it ends (%v)", r[0], r[1], r[2], tab.Rows[i-1][3])
				}
			}
		}
		if groups == 0 {
			t.Fatal("no tool_call file has two row groups; the order between them is not tested")
		}
		// A reader skips every row group whose session range leaves the
		// session out: here most of them.
		session := rows(t, src, "select session from sessions order by session limit 1 offset 10")[0]
		all := filepath.Join(small, "*", "*"+ParquetExt)
		q = "select file_name, count(*), count(*) filter (where stats_min <= " + quoteString(session) + " and stats_max >= " + quoteString(session) +
			") from parquet_metadata(" + quoteString(all) + ") where path_in_schema = 'session' group by file_name having count(*) > 1"
		per, err := src.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		skipped := 0
		for _, r := range per.Rows {
			groups, holding := r[1].(int64), r[2].(int64)
			if holding > 2 {
				t.Errorf("%v: %d of %d row groups may hold session %s; want one, or two where it straddles", r[0], holding, groups, session)
			}
			skipped += int(groups - holding)
		}
		if skipped == 0 {
			t.Errorf("no row group of %d files rules session %s out by its min and max", len(per.Rows), session)
		}
		filtered := "select count(*) from read_parquet(" + quoteString(all) + ", hive_partitioning = true) where session = " + quoteString(session)
		want := rows(t, src, "select count(*) from events where session = "+quoteString(session))[0]
		if got := rows(t, src, filtered)[0]; got != want {
			t.Fatalf("%s has %s events in the lake, %s loaded", session, got, want)
		}
	})
	t.Run("An export in parts numbers a type's files in a partition in the order of their sessions, so a session is in one of them.", func(t *testing.T) {
		defer func(n int64) { exportPartEvents = n }(exportPartEvents)
		exportPartEvents = 2000
		corpus := filepath.Join(t.TempDir(), "day")
		if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 300, Seed: 5, Days: 1}); err != nil {
			t.Fatal(err)
		}
		src := open(t, Options{}, corpus)
		parts := filepath.Join(t.TempDir(), "parts")
		rep, err := src.ExportParquet(ctx, parts, false)
		if err != nil {
			t.Fatal(err)
		}
		// The session ranges of each partition's files of a type, in the
		// order of their numbers.
		type span struct {
			n        int
			min, max string
		}
		spans := map[string][]span{}
		for _, f := range rep.Files {
			typ, ok := lakeFileType(filepath.Base(f))
			if !ok {
				t.Fatalf("%s is not named for an event type", f)
			}
			var n int
			fmt.Sscanf(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), string(typ)+"_"), ParquetExt), "%d", &n)
			r := rows(t, src, "select min(session) || ' ' || max(session) from read_parquet("+quoteString(filepath.Join(parts, f))+")")
			lo, hi, _ := strings.Cut(r[0], " ")
			key := filepath.Join(filepath.Dir(f), string(typ))
			spans[key] = append(spans[key], span{n, lo, hi})
		}
		several := 0
		for key, ss := range spans {
			slices.SortFunc(ss, func(a, b span) int { return a.n - b.n })
			for i, s := range ss {
				if s.n != i {
					t.Fatalf("%s: files numbered %v, want 0 to %d", key, ss, len(ss)-1)
				}
				if i > 0 && ss[i-1].max >= s.min {
					t.Errorf("%s: file %d ends at session %s, file %d starts at %s", key, i-1, ss[i-1].max, i, s.min)
				}
			}
			if len(ss) > 1 {
				several++
			}
		}
		if several == 0 {
			t.Fatalf("no partition has two files of a type (%d files); the parts are not tested", len(rep.Files))
		}
		// A reader of one session reads at most one file of each type
		// in a partition: the others' footers rule it out.
		session := rows(t, src, "select session from sessions order by session limit 1 offset 150")[0]
		q := "select distinct file_name from parquet_metadata(" + quoteString(filepath.Join(parts, "*", "*"+ParquetExt)) +
			") where path_in_schema = 'session' and stats_min <= " + quoteString(session) + " and stats_max >= " + quoteString(session)
		holding := rows(t, src, q)
		seen := map[string]string{}
		for _, f := range holding {
			typ, _ := lakeFileType(filepath.Base(f))
			key := filepath.Join(filepath.Dir(f), string(typ))
			if other, ok := seen[key]; ok {
				t.Errorf("both %s and %s may hold session %s", other, f, session)
			}
			seen[key] = f
		}
		if len(holding) == 0 || len(holding) >= len(rep.Files) {
			t.Errorf("%d of %d files may hold session %s; want some, and not all", len(holding), len(rep.Files), session)
		}
	})
}

func TestIsLakeOnlyWhenEveryInputIsParquet(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("lake/date=2026-12-06/tool_call_0.parquet")
	run := write("runs/a" + trajectory.Ext)
	write("mixed/date=2026-12-06/tool_call_0.parquet")
	write("mixed/b" + trajectory.Ext)
	for _, c := range []struct {
		paths []string
		want  bool
	}{
		{[]string{filepath.Join(dir, "lake")}, true},
		{[]string{filepath.Join(dir, "lake", "*", "*.parquet")}, true},
		{[]string{filepath.Join(dir, "lake"), run}, false},
		{[]string{filepath.Join(dir, "mixed")}, false},
		{[]string{filepath.Join(dir, "runs")}, false},
		{[]string{trajectory.Stdin}, false},
		{nil, false},
	} {
		if got := IsLake(c.paths); got != c.want {
			t.Errorf("IsLake(%q) = %v, want %v", c.paths, got, c.want)
		}
	}
}

func TestAnExportByLabelInPartsHasEverySessionUnderItsLabel(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { exportPartEvents = n }(exportPartEvents)
	exportPartEvents = 300
	corpus := filepath.Join(t.TempDir(), "synth")
	if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 40, Seed: 3, Days: 2}); err != nil {
		t.Fatal(err)
	}
	src := open(t, Options{}, corpus)
	dir := filepath.Join(t.TempDir(), "lake")
	rep, err := src.ExportParquetByLabel(ctx, dir, false, "project")
	if err != nil {
		t.Fatal(err)
	}
	if want := rows(t, src, "select count(*) from events")[0]; fmt.Sprint(rep.Events) != want {
		t.Fatalf("exported %d events, want the %s loaded", rep.Events, want)
	}
	second, err := filepath.Glob(filepath.Join(dir, "label=*", "date=*", "tool_call_1"+ParquetExt))
	if err != nil || len(second) == 0 {
		t.Fatalf("no partition has a second tool_call file (%v); the parts are not tested", err)
	}
	q := "select count(*) from read_parquet(" + quoteString(filepath.Join(dir, "label=*", "date=*", "*"+ParquetExt)) + ", hive_partitioning = true) e" +
		" join (select session, json_extract_string(tags, '$.project') as p from raw_session_start) s using (session)" +
		" where e.label is distinct from s.p"
	if got := rows(t, src, q)[0]; got != "0" {
		t.Errorf("%s events sit under another session's label", got)
	}
	sameRowsOverTheLake(t, src, dir)
}

// A Parquet export is a copy of the trajectories it was made from. A load
// given two exports of the same sessions, or an export together with its
// trajectories, would count each session twice (or answer from the
// export's stale copy of a trajectory that grew since), so it is refused,
// naming the session and both inputs, whatever the order and with or
// without a store.
func TestALoadRefusesASessionBothInAnExportAndInAnotherInput(t *testing.T) {
	ctx := context.Background()
	runs := filepath.Join(t.TempDir(), "runs")
	if _, err := synth.Write(ctx, runs, synth.Options{Sessions: 2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if _, err := synth.Write(ctx, other, synth.Options{Sessions: 2, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	export := func(paths ...string) string {
		dir := filepath.Join(t.TempDir(), "lake")
		if _, err := open(t, Options{}, paths...).ExportParquet(ctx, dir, false); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	lake, again, otherLake := export(runs), export(runs), export(other)
	sessions := rows(t, open(t, Options{}, runs), "select session from sessions order by session")
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"two exports of the same runs", []string{lake, again}},
		{"an export and its trajectories", []string{lake, runs}},
		{"the trajectories and their export", []string{runs, lake}},
		{"an export, another one and the first's trajectories", []string{otherLake, lake, runs}},
	} {
		for _, store := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, store %v", tc.name, store), func(t *testing.T) {
				opts := Options{}
				if store {
					opts.Path = filepath.Join(t.TempDir(), "store.duckdb")
				}
				db, err := Open(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				_, err = db.Load(ctx, tc.paths...)
				var le *LoadError
				if !errors.Is(err, ErrDuplicateSession) || !errors.As(err, &le) {
					t.Fatalf("load of %v: %v, want a LoadError of ErrDuplicateSession", tc.paths, err)
				}
				msg := err.Error()
				if !strings.Contains(msg, sessions[0]) || !strings.Contains(msg, lake) || strings.Contains(msg, "--strict-dupes") {
					t.Errorf("the error does not name session %s and %s, or blames --strict-dupes:\n%s", sessions[0], lake, msg)
				}
			})
		}
	}
	t.Run("An export beside trajectories of other sessions loads them all", func(t *testing.T) {
		db := open(t, Options{}, otherLake, runs)
		if got := rows(t, db, "select count(distinct session), count(*) = count(distinct (session, seq)) from events")[0]; got != "4|true" {
			t.Fatalf("sessions|no doubled event = %s, want 4|true", got)
		}
	})
}
