package shell

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// corpusRow is one line of testdata/corpus.jsonl, the adversarial corpus
// the permission package reads too.
type corpusRow struct {
	Label  string `json:"label"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
	Cmd    string `json:"cmd"`
}

// loadCorpus reads the corpus and fails the test on any malformed line.
func loadCorpus(t testing.TB) []corpusRow {
	t.Helper()
	f, err := os.Open("testdata/corpus.jsonl")
	if err != nil {
		t.Fatalf("open the corpus: %v", err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var r corpusRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("testdata/corpus.jsonl:%d: %v", line, err)
		}
		if r.Cmd == "" || r.Reason == "" || r.Class == "" {
			t.Fatalf("testdata/corpus.jsonl:%d: cmd, class and reason are required", line)
		}
		switch r.Label {
		case "read_only", "dangerous", "other":
		default:
			t.Fatalf("testdata/corpus.jsonl:%d: label %q is not read_only, dangerous or other", line, r.Label)
		}
		if r.Label == "dangerous" && !slices.Contains(DangerClasses, r.Class) {
			t.Fatalf("testdata/corpus.jsonl:%d: class %q is not one of DangerClasses", line, r.Class)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the corpus: %v", err)
	}
	return rows
}

func TestCorpusClassification(t *testing.T) {
	rows := loadCorpus(t)
	if len(rows) < 300 {
		t.Fatalf("the corpus has %d commands; keep at least 300", len(rows))
	}
	classes := map[string]bool{}
	for _, r := range rows {
		a := Analyze(r.Cmd)
		got := ""
		if a.Danger != nil {
			got = a.Danger.Name
		}
		switch r.Label {
		case "read_only":
			if !a.ReadOnly || a.Danger != nil {
				t.Errorf("%q (%s): want read-only, got ReadOnly=%v Danger=%q Why=%q", r.Cmd, r.Reason, a.ReadOnly, got, a.Why)
			}
		case "dangerous":
			classes[r.Class] = true
			if a.ReadOnly || got != r.Class {
				t.Errorf("%q (%s): want dangerous %s, got ReadOnly=%v Danger=%q", r.Cmd, r.Reason, r.Class, a.ReadOnly, got)
			}
		case "other":
			if a.ReadOnly || a.Danger != nil {
				t.Errorf("%q (%s): want neither read-only nor dangerous, got ReadOnly=%v Danger=%q Why=%q", r.Cmd, r.Reason, a.ReadOnly, got, a.Why)
			}
		}
	}
	for _, c := range DangerClasses {
		if !classes[c] {
			t.Errorf("the corpus has no dangerous command of class %s", c)
		}
	}
}
