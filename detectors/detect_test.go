package detectors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// detectOnce opens a new database with opts and loads and detects paths
// with Detect.
func detectOnce(t testing.TB, opts metrics.Options, ds []Detector, paths ...string) (Report, metrics.LoadReport, error) {
	t.Helper()
	db, err := metrics.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Detect(context.Background(), db, paths, ds, Options{})
}

// Detect, which hands the Go detectors the events the load decodes, finds
// what Run finds reading the files again, with the type filter and without
// it: on every fixture, on the liveness fixtures, and on a synth corpus
// with every fault planted.
func TestDetectInOnePassFindsWhatRunFinds(t *testing.T) {
	planted, _ := plantedCorpus(t, 240, synth.Faults)
	for _, tc := range []struct {
		name  string
		paths []string
		ds    []Detector
	}{
		{"Every detector over every must-fire fixture.", []string{"testdata/fire"}, Catalog()},
		{"Every detector over every clean fixture.", []string{"testdata/clean"}, Catalog()},
		{"dead_defense alone over the liveness fixtures.", []string{"testdata/liveness", "testdata/fire/dead_defense.jsonl"}, mustSelect(t, "dead_defense")},
		{"Every detector over a synth corpus with every fault planted.", []string{planted}, Catalog()},
		{"The SQL detectors alone, which need no events.", []string{planted}, mustSelect(t, "lost_call", "denial_loop")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lrep, err := detectOnce(t, metrics.Options{}, tc.ds, tc.paths...)
			if err != nil {
				t.Fatal(err)
			}
			if lrep.Events == 0 || got.Events != lrep.Events || len(got.Unread) > 0 {
				t.Fatalf("loaded %d events, report counts %d, unread %v", lrep.Events, got.Events, got.Unread)
			}
			for _, filter := range []bool{true, false} {
				filterTypes = filter
				want := detect(t, tc.ds, tc.paths...)
				filterTypes = true
				if !reflect.DeepEqual(got, want) {
					// Name the first finding that differs, not all of them.
					for i := range min(len(got.Findings), len(want.Findings)) {
						if !reflect.DeepEqual(got.Findings[i], want.Findings[i]) {
							t.Fatalf("filter %v: finding %d differs:\nDetect %+v\nRun    %+v", filter, i, got.Findings[i], want.Findings[i])
						}
					}
					t.Fatalf("filter %v: Detect found %d findings, Run %d; the reports differ outside the findings:\nDetect %+v\nRun    %+v",
						filter, len(got.Findings), len(want.Findings), got.Detectors, want.Detectors)
				}
			}
		})
	}
}

func mustSelect(t testing.TB, ids ...string) []Detector {
	t.Helper()
	ds, err := Select(ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A trajectory piped in reaches the Go detectors too, which Run cannot
// give them: it finds what it finds in the same file on disk.
func TestDetectSeesStandardInput(t *testing.T) {
	file := "testdata/fire/unpaired_tool_use.jsonl"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := detectOnce(t, metrics.Options{Stdin: strings.NewReader(string(b))}, Catalog(), "-")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Unread) > 0 || got.Counts()["unpaired_tool_use"] == 0 {
		t.Fatalf("from stdin: unread %v, findings %v; want unpaired_tool_use and nothing unread", got.Unread, ids(got))
	}
	want := detect(t, Catalog(), file)
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("from stdin %v, from the file %v", ids(got), ids(want))
	}
}

func ids(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Detector+":"+f.Session)
	}
	return out
}

// A strict load that is refused finds nothing, and says why with the
// load's own error; a lenient one skips the bad line and detects the rest.
func TestDetectKeepsTheLoadsStrictness(t *testing.T) {
	b, err := os.ReadFile("testdata/fire/lost_call.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, append([]byte("{not json\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _, err := detectOnce(t, metrics.Options{}, Catalog(), bad)
	var lo *metrics.LoadError
	if !errors.As(err, &lo) || len(rep.Findings) > 0 || !strings.Contains(err.Error(), bad+":1") {
		t.Fatalf("strict: err = %v with %d findings; want a LoadError naming %s:1 and no finding", err, len(rep.Findings), bad)
	}
	want := detect(t, mustSelect(t, "lost_call"), "testdata/fire/lost_call.jsonl")
	rep, lrep, err := detectOnce(t, metrics.Options{Lenient: true}, Catalog(), bad)
	if err != nil || lrep.Skipped() != 1 || rep.Counts()["lost_call"] == 0 {
		t.Fatalf("lenient: err = %v, skipped %d, findings %v; want lost_call past the skipped line", err, lrep.Skipped(), ids(rep))
	}
	if i := slices.IndexFunc(rep.Findings, func(f Finding) bool { return f.Detector == "lost_call" }); rep.Findings[i].Line() != want.Findings[0].Line()+1 {
		t.Fatalf("lenient: lost_call at line %d, want %d: the lines count the skipped one", rep.Findings[i].Line(), want.Findings[0].Line()+1)
	}
}

// The liveness table built in the load's pass is the one read from the
// files again.
func TestLoadLivenessIsComputeLiveness(t *testing.T) {
	paths := []string{"testdata/liveness", "testdata/fire/dead_defense.jsonl", "testdata/clean/dead_defense.jsonl"}
	db, err := metrics.Open(context.Background(), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, _, err := LoadLiveness(context.Background(), db, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := liveness(t, paths...)
	if len(got.Defenses) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("in the load's pass\n%+v\nread again\n%+v", got, want)
	}
}

// A Parquet export is loaded without its lines being checked, so the load
// hands nothing of it over: Detect reads its trajectory files again as
// Run does, and lists them as unread once they are gone.
func TestDetectReadsTheFilesOfAParquetExportAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "unpaired.jsonl")
	b, err := os.ReadFile("testdata/fire/unpaired_tool_use.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "export")
	if _, err := loaded(t, file).ExportParquet(ctx, export, false); err != nil {
		t.Fatal(err)
	}
	want := detect(t, Catalog(), file)
	got, _, err := detectOnce(t, metrics.Options{}, Catalog(), export)
	if err != nil {
		t.Fatal(err)
	}
	if got.Counts()["unpaired_tool_use"] == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("from Parquet %+v\nfrom the file %+v", got, want)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	got, _, err = detectOnce(t, metrics.Options{}, Catalog(), export)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Unread, []string{file}) || got.Counts()["unpaired_tool_use"] > 0 {
		t.Fatalf("with the file gone: unread %v, counts %v; want the file unread and no Go finding", got.Unread, got.Counts())
	}
}
