package metrics

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// Every row the load appends equals the row DuckDB's own read_json makes
// of the same line with the same column types, value for value: the
// appender path reads JSON (normalised numbers, escapes, key spacing),
// timestamps and strings exactly as the staged read_json did. The corpus
// is the valid fixtures, a synth corpus, and a line respelled with
// escapes, blanks, an exponent and a timestamp offset.
func TestAppendedRowsEqualReadJSON(t *testing.T) {
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
	for _, in := range []string{dir} {
		t.Run("", func(t *testing.T) {
			db := open(t, Options{}, in)
			var cols []string
			for _, c := range Columns() {
				cols = append(cols, quoteIdent(c.Name))
			}
			sel := strings.Join(cols, ", ")
			glob := filepath.Join(in, "**", "*.jsonl")
			direct := "SELECT " + sel + " FROM read_json(" + quoteString(glob) + ", format = 'newline_delimited', columns = " + columnsSQL(Columns()) + ")"
			for _, q := range []string{
				"SELECT count(*) FROM (SELECT " + sel + " FROM raw_events EXCEPT ALL " + direct + ")",
				"SELECT count(*) FROM (" + direct + " EXCEPT ALL SELECT " + sel + " FROM raw_events)",
			} {
				if got := rows(t, db, q); got[0] != "0" {
					t.Errorf("%s: %s rows differ", q, got[0])
				}
			}
			if got := rows(t, db, "SELECT count(*) FROM raw_events"); got[0] == "0" {
				t.Fatal("nothing loaded")
			}
			if got := rows(t, db, "SELECT count(*) FROM raw_events WHERE line IS NULL OR line < 1 OR file IS NULL"); got[0] != "0" {
				t.Errorf("%s rows without file or line", got[0])
			}
		})
	}
}

// A strict load refused for a bad line in its second file appends nothing:
// the rows of the first file, appended while the second was being
// checked, are rolled back with the load's transaction.
func TestARefusedLoadLeavesNoAppendedRows(t *testing.T) {
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

// members follows the outline of checked lines, escapes and nesting
// included, and refuses what is not an object.
func TestMembers(t *testing.T) {
	var got []string
	err := members([]byte(` { "a" : "x\"}" , "b\u0063":{"d":[1,"]",{}]},"e":-1.5e3,"f":null} `), func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	want := `a="x\"}"|bc={"d":[1,"]",{}]}|e=-1.5e3|f=null`
	if err != nil || strings.Join(got, "|") != want {
		t.Fatalf("members = %q, %v; want %q", strings.Join(got, "|"), err, want)
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a":1`, `{"a":"x}`} {
		if err := members([]byte(bad), func(k, v []byte) error { return nil }); !errors.Is(err, errRow) {
			t.Errorf("members(%q) = %v, want errRow", bad, err)
		}
	}
}
