package recorder

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
)

var sessionIDForm = regexp.MustCompile(`^\d{8}-\d{6}\.\d{3}-[0-9a-f]{8}$`)

func TestSessionIDsHaveTheDocumentedForm(t *testing.T) {
	got := NewSessionID(time.Date(2026, 11, 30, 0, 28, 24, 123456789, time.UTC))
	if !sessionIDForm.MatchString(got) || got[:19] != "20261130-002824.123" {
		t.Errorf("NewSessionID = %q, want 20261130-002824.123-<8 hex>", got)
	}
	// The time is written in UTC whatever the zone of t.
	local := time.Date(2026, 11, 30, 1, 28, 24, 0, time.FixedZone("CET", 3600))
	if got := NewSessionID(local); got[:19] != "20261130-002824.000" {
		t.Errorf("NewSessionID(CET) = %q, want the UTC time", got)
	}
}

func TestSessionIDsSortInStartOrder(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, time.Hour, 24 * time.Hour, 400 * 24 * time.Hour}
	var ids []string
	for _, d := range steps {
		ids = append(ids, NewSessionID(start.Add(d)))
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids of increasing times do not sort in order: %q", ids)
	}
}

func TestCreateTwiceInOneMillisecondMakesTwoFiles(t *testing.T) {
	dir := t.TempDir()
	fixed := func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }
	a, err := Create(dir, Options{Clock: fixed})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(dir, Options{Clock: fixed})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	a.Emit(0, sessionStart())
	b.Emit(0, sessionStart())
	if a.Path() == b.Path() || a.SessionID() == b.SessionID() {
		t.Fatalf("both sessions got %s", a.Path())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 2 {
		t.Errorf("got %d files, want 2", len(files))
	}
	for _, r := range []*Recorder{a, b} {
		if !sessionIDForm.MatchString(r.SessionID()) || filepath.Base(r.Path()) != r.SessionID()+".jsonl" {
			t.Errorf("session %q at %s", r.SessionID(), r.Path())
		}
	}
}
