package metrics

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// unionByPosition is the raw_events view as schemaSQL made it before it
// unioned by name: every missing column cast from NULL by hand. It is kept
// for the test that both views are the same and for the benchmark that
// measures the difference.
func unionByPosition() string {
	all := append(Columns(), where()...)
	var union []string
	for _, t := range trajectory.EventTypes() {
		own := map[string]bool{}
		for _, c := range append(typeColumns(t), where()...) {
			own[c.Name] = true
		}
		sel := make([]string, len(all))
		for i, c := range all {
			sel[i] = quoteIdent(c.Name)
			if !own[c.Name] {
				sel[i] = "CAST(NULL AS " + c.Type + ") AS " + quoteIdent(c.Name)
			}
		}
		union = append(union, "SELECT "+strings.Join(sel, ", ")+" FROM "+typeTable(t))
	}
	return "CREATE OR REPLACE VIEW raw_events AS\n" + strings.Join(union, "\nUNION ALL\n") + ";\n"
}

// The raw_events view unioned by name has the columns, in the order and
// with the types, of the view spelled out by position, and every metric
// and every row over the valid fixtures is the same through either.
func TestRawEventsByNameEqualsByPosition(t *testing.T) {
	ctx := context.Background()
	entries, err := os.ReadDir(validDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			files = append(files, filepath.Join(validDir, e.Name()))
		}
	}
	lenient := Options{Lenient: true}
	byName := open(t, lenient, files...)
	byPos := open(t, lenient, files...)
	if _, err := byPos.Query(ctx, unionByPosition()); err != nil {
		t.Fatal(err)
	}
	describe := "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'raw_events' ORDER BY ordinal_position"
	if got, want := rows(t, byName, describe), rows(t, byPos, describe); !slices.Equal(got, want) || len(got) < 80 {
		t.Fatalf("raw_events columns by name\n%v\nby position\n%v", got, want)
	}
	all := "SELECT * FROM raw_events ORDER BY file, line, seq"
	if got, want := rows(t, byName, all), rows(t, byPos, all); !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("raw_events rows differ: %d by name, %d by position", len(got), len(want))
	}
	for _, n := range Metrics() {
		if got, want := preparedRows(t, byName, n), preparedRows(t, byPos, n); !slices.Equal(got, want) {
			t.Errorf("%s by name\n%v\nby position\n%v", n, got, want)
		}
	}
}

// BenchmarkRawEventsUnion runs every named metric over a loaded corpus of
// about 100k events through raw_events unioned by name and, as the
// baseline in the same run, by position, so that the faster planning is
// not paid for with slower execution on real data.
func BenchmarkRawEventsUnion(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	events := writeCorpus(b, dir, corpusSessions/10)
	for _, form := range []string{"by_position_before", "by_name"} {
		b.Run(form, func(b *testing.B) {
			db := open(b, Options{}, dir)
			if form == "by_position_before" {
				if _, err := db.Query(ctx, unionByPosition()); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				for _, n := range Metrics() {
					if _, err := db.Query(ctx, mustSQL(b, n)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
			b.ReportMetric(float64(events), "events")
		})
	}
}
