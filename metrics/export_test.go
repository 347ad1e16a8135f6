package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

func TestParquetRoundTripGivesTheSameMetricsAsTheJSONL(t *testing.T) {
	ctx := context.Background()
	// A small synth corpus beside the fixtures gives every metric rows
	// (unknown_tools needs a tool name the model made up).
	corpus := filepath.Join(t.TempDir(), "synth")
	if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 12, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	src := open(t, Options{}, validDir, filepath.Join(invalidDir, "lost_call.jsonl"), corpus)
	dir := filepath.Join(t.TempDir(), "export")
	rep, err := src.ExportParquet(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if loaded := rows(t, src, "select count(*) from events"); fmt.Sprint(rep.Events) != loaded[0] {
		t.Errorf("exported %d events, want the %s loaded", rep.Events, loaded[0])
	}
	// Every file sits in a date=YYYY-MM-DD partition.
	var days []string
	for _, f := range rep.Files {
		if !strings.HasSuffix(f, ParquetExt) {
			t.Errorf("export wrote %s, not a Parquet file", f)
		}
		days = append(days, strings.Split(f, string(filepath.Separator))[0])
	}
	if len(days) == 0 || !strings.HasPrefix(days[0], "date=") {
		t.Fatalf("files %v are not hive-partitioned by date", rep.Files)
	}
	back := open(t, Options{}, dir)
	for _, name := range append(Metrics(), "events") {
		t.Run(name, func(t *testing.T) {
			q := "select * from events order by session, seq"
			if name != "events" {
				q = mustSQL(t, name)
			}
			want, err := src.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := back.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Rows) == 0 {
				t.Fatalf("%s has no rows over the fixtures; the comparison would prove nothing", name)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("over Parquet\n%v\nover JSONL\n%v", got.Rows, want.Rows)
			}
		})
	}
}

func TestParquetExportAndLoadRefuseWhatTheyShouldNot(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{}, filepath.Join(validDir, "basic.jsonl"))
	t.Run("An export into a directory with files in it is refused unless told to overwrite.", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExportParquet(ctx, dir, false); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("err = %v, want ErrNotEmpty", err)
		}
		if _, err := db.ExportParquet(ctx, dir, true); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "keep.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("overwrite kept the old file: %v", err)
		}
	})
	t.Run("Loading an export twice replaces its events rather than doubling them.", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "x")
		if _, err := db.ExportParquet(ctx, dir, false); err != nil {
			t.Fatal(err)
		}
		back := open(t, Options{}, dir, dir)
		if got := rows(t, back, "select count(*) from events"); got[0] != "11" {
			t.Fatalf("events = %s, want 11", got[0])
		}
	})
	t.Run("A Parquet file that is not a retrace export is refused naming the missing column.", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "other.parquet")
		if _, err := db.sql.ExecContext(ctx, "COPY (SELECT 1 AS a) TO "+quoteString(p)+" (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		_, err := open(t, Options{}).Load(ctx, p)
		if err == nil || !strings.Contains(err.Error(), `column "v" is missing`) {
			t.Fatalf("err = %v, want the missing column named", err)
		}
	})
}

func TestAnExportReportsItsProgressPartByPart(t *testing.T) {
	ctx := context.Background()
	defer func(n int64) { exportPartEvents = n }(exportPartEvents)
	exportPartEvents = 500
	corpus := filepath.Join(t.TempDir(), "synth")
	if _, err := synth.Write(ctx, corpus, synth.Options{Sessions: 20, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	var seen []Progress
	db := open(t, Options{Progress: func(p Progress) {
		if p.Phase == "export" {
			seen = append(seen, p)
		}
	}}, corpus)
	rep, err := db.ExportParquet(ctx, filepath.Join(t.TempDir(), "lake"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("%d export progress calls over %d events in parts of %d; want one a part", len(seen), rep.Events, exportPartEvents)
	}
	for i, p := range seen {
		if p.Total != rep.Events || p.Done > p.Total || i > 0 && p.Done <= seen[i-1].Done {
			t.Fatalf("progress %d is %+v after %+v; want events written rising to the %d exported", i, p, seen[max(i-1, 0)], rep.Events)
		}
	}
	if last := seen[len(seen)-1]; last.Done != rep.Events {
		t.Fatalf("the last progress is %+v; want all %d events written", last, rep.Events)
	}
}
