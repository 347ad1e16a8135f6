package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// addRuns writes n synth sessions of seed into dir the way a recorder
// finishes a file: written aside, then renamed into place, so that a
// reader never sees half a file.
func addRuns(t testing.TB, dir string, n int, seed int64) {
	t.Helper()
	tmp := t.TempDir()
	if _, err := synth.Write(context.Background(), tmp, synth.Options{Sessions: n, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "*.jsonl"))
	for _, f := range files {
		if err := os.Rename(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
}

func openLoad(ctx context.Context, cfg Config, paths ...string) (*metrics.DB, metrics.LoadReport, error) {
	return Open(ctx, cfg, paths, func(db *metrics.DB) (metrics.LoadReport, error) { return db.Load(ctx, paths...) })
}

func count(t testing.TB, db *metrics.DB, q string) int {
	t.Helper()
	tb, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(fmt.Sprint(tb.Rows[0][0]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A corpus read twice through the cache: the second time nothing is
// read and the store's file does not change; a new file is read alone;
// Info lists the store with its corpus, and Clean deletes it.
func TestCacheKeepsACorpusBetweenOpens(t *testing.T) {
	ctx := context.Background()
	runs, cache := t.TempDir(), t.TempDir()
	addRuns(t, runs, 4, 1)
	cfg := Config{Dir: cache}
	db, rep, err := openLoad(ctx, cfg, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 4 {
		t.Fatalf("first open read %d files, want 4", len(rep.Files))
	}
	sessions := count(t, db, "SELECT count(*) FROM sessions")
	db.Close()
	path := filepath.Join(cache, Key([]string{runs})+Ext)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no store where Key says: %v", err)
	}
	db, rep, err = openLoad(ctx, cfg, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 0 || count(t, db, "SELECT count(*) FROM sessions") != sessions {
		t.Fatalf("unchanged corpus: read %d files", len(rep.Files))
	}
	db.Close()
	after, _ := os.Stat(path)
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the store's file changed over an unchanged corpus: %d bytes at %v, then %d at %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
	}
	addRuns(t, runs, 1, 2)
	db, rep, err = openLoad(ctx, cfg, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 || count(t, db, "SELECT count(*) FROM sessions") != sessions+1 {
		t.Fatalf("one file added: read %d files", len(rep.Files))
	}
	db.Close()
	entries, err := Info(cache)
	if err != nil || len(entries) != 1 || entries[0].Path != path || len(entries[0].Corpus) != 1 || entries[0].Size == 0 {
		t.Fatalf("Info: %+v, %v", entries, err)
	}
	// Held open, a store is not deleted; let go, it is.
	db, _, err = openLoad(ctx, cfg, runs)
	if err != nil {
		t.Fatal(err)
	}
	removed, busy, err := Clean(cache, time.Time{})
	if err != nil || len(removed) != 0 || len(busy) != 1 {
		t.Fatalf("Clean while in use: removed %v, busy %v, %v", removed, busy, err)
	}
	db.Close()
	if removed, _, err = Clean(cache, time.Time{}); err != nil || len(removed) != 1 {
		t.Fatalf("Clean: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the store is still there after Clean: %v", err)
	}
}

// The cache is bounded: past Max, the least recently used store goes.
func TestCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	var dirs []string
	for i := range 3 {
		d := t.TempDir()
		addRuns(t, d, 2, int64(i+1))
		dirs = append(dirs, d)
	}
	db, _, err := openLoad(ctx, Config{Dir: cache}, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	one, _ := Info(cache)
	// Old enough to go first.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lockPath(one[0].Path), old, old)
	for _, d := range dirs[1:] {
		db, _, err := openLoad(ctx, Config{Dir: cache, Max: one[0].Size*2 + one[0].Size/2}, d)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	entries, _ := Info(cache)
	if len(entries) != 2 {
		t.Fatalf("%d stores after 3 corpora with room for 2: %+v", len(entries), entries)
	}
	for _, e := range entries {
		if e.Path == one[0].Path {
			t.Fatalf("the least recently used store stayed: %+v", entries)
		}
	}
}

// helperEnv makes the test binary a reader process (TestReaderProcess).
const helperEnv = "RETRACE_STORE_READER"

// TestReaderProcess is a process of TestConcurrentReadersAndWriter, not a
// test of its own: it opens the store of the runs again and again until
// told to stop, checks that the derived tables agree with the events
// (half an update would not), and prints what it saw.
func TestReaderProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("a helper process of TestConcurrentReadersAndWriter")
	}
	parts := strings.Split(spec, "|")
	cache, runs, stop := parts[0], parts[1], parts[2]
	ctx := context.Background()
	reads, busy := 0, 0
	for {
		if _, err := os.Stat(stop); err == nil && reads > 0 {
			break
		}
		db, _, err := openLoad(ctx, Config{Dir: cache, Wait: 5 * time.Second}, runs)
		if errors.Is(err, ErrBusy) {
			busy++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		calls := count(t, db, "SELECT count(*) FROM raw_tool_call")
		derived := count(t, db, "SELECT count(*) FROM tool_calls")
		summed := count(t, db, "SELECT coalesce(sum(tool_calls), 0) FROM sessions")
		files := count(t, db, "SELECT count(DISTINCT file) FROM events")
		db.Close()
		if calls != derived || calls != summed {
			t.Fatalf("inconsistent store: %d calls, %d in tool_calls, %d summed over sessions", calls, derived, summed)
		}
		if files == 0 {
			t.Fatal("an empty store")
		}
		reads++
	}
	fmt.Printf("reads=%d busy=%d\n", reads, busy)
}

// Two processes reading a store while a third adds runs and reads it
// (so updates it) all see consistent stores, and the store then answers
// as a cold load does.
func TestConcurrentReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	runs, cache := t.TempDir(), t.TempDir()
	addRuns(t, runs, 6, 1)
	db, _, err := openLoad(ctx, Config{Dir: cache}, runs)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	stop := filepath.Join(t.TempDir(), "stop")
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestReaderProcess$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+cache+"|"+runs+"|"+stop)
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	// The writer: new runs land, and each time it reads the store, which
	// brings it up to date, while the readers read.
	for i := range 6 {
		addRuns(t, runs, 1, int64(10+i))
		db, rep, err := openLoad(ctx, Config{Dir: cache, Wait: 5 * time.Second}, runs)
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
		// A reader may have brought the store up to date first.
		if len(rep.Files) > 1 {
			t.Errorf("writer: %d files read after one landed", len(rep.Files))
		}
		db.Close()
		time.Sleep(50 * time.Millisecond)
	}
	os.WriteFile(stop, nil, 0o644)
	wg.Wait()
	for i := range 2 {
		at := strings.LastIndex(outs[i], "reads=")
		if errs[i] != nil || at < 0 {
			t.Errorf("reader %d: %v\n%s", i, errs[i], outs[i])
			continue
		}
		t.Logf("reader %d: %s", i, strings.TrimSpace(outs[i][at:]))
	}
	db, _, err = openLoad(ctx, Config{Dir: cache}, runs)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cold, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	if _, err := cold.Load(ctx, runs); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT count(*) FROM events", "SELECT count(*) FROM tool_calls", "SELECT count(*) FROM sessions", "SELECT sum(output_tokens) FROM model_turns"} {
		if got, want := count(t, db, q), count(t, cold, q); got != want {
			t.Errorf("%s: store %d, cold %d", q, got, want)
		}
	}
}

// The rows of a store name their files as the paths given spell them, so
// the same runs given as a relative and as an absolute path have a store
// each: shared, each spelling would take the other's files for removed
// and read every file again (at 10M events, a rebuild of minutes on
// every call).
func TestTwoSpellingsOfACorpusKeepAStoreEach(t *testing.T) {
	ctx := context.Background()
	parent, cache := t.TempDir(), t.TempDir()
	runs := filepath.Join(parent, "runs")
	if err := os.Mkdir(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	addRuns(t, runs, 3, 1)
	t.Chdir(parent)
	cfg := Config{Dir: cache}
	if Key([]string{"runs"}) == Key([]string{runs}) {
		t.Fatalf("the relative and the absolute spelling have the same key %s", Key([]string{runs}))
	}
	if Key([]string{runs, "runs"}) != Key([]string{"runs", runs}) {
		t.Fatal("the key depends on the order of the paths")
	}
	for _, spelling := range []string{"runs", runs, "runs", runs} {
		db, rep, err := openLoad(ctx, cfg, spelling)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if len(rep.Files) != 0 && len(rep.Unchanged) != 0 {
			t.Fatalf("%s: read %d files and held %d unchanged", spelling, len(rep.Files), len(rep.Unchanged))
		}
	}
	for _, spelling := range []string{"runs", runs} {
		db, rep, err := openLoad(ctx, cfg, spelling)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if len(rep.Files) != 0 || len(rep.Unchanged) != 3 {
			t.Fatalf("%s, a third time: read %d files, held %d unchanged; want 0 and 3", spelling, len(rep.Files), len(rep.Unchanged))
		}
	}
}

// A --db FILE queried without runs is a store an earlier call built: a
// path where there is none (a typo) is an error wrapping fs.ErrNotExist,
// not an empty store made on the spot that answers every query with no
// rows, and nothing is left at the path.
func TestOpeningAStoreThatIsNotThereWithoutRunsIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "typo.duckdb")
	db, _, err := openLoad(ctx, Config{File: file})
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmt.Sprint(err), file) {
		t.Fatalf("open of the missing store %s without runs: %v, want an error naming it and wrapping fs.ErrNotExist", file, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the failed open left %v in %s", left, dir)
	}
	// Built with runs, it is then opened as it is.
	runs := t.TempDir()
	addRuns(t, runs, 2, 1)
	db, _, err = openLoad(ctx, Config{File: file}, runs)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, _, err = openLoad(ctx, Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := count(t, db, "SELECT count(*) FROM sessions"); n != 2 {
		t.Errorf("the store built before holds %d sessions, want 2", n)
	}
}

// A --db FILE that is something else than a store (a directory, a file
// of another kind) is refused with ErrNotStore naming it, before DuckDB is
// asked to open it, and left as it is.
func TestOpeningSomethingElseThanAStoreIsRefused(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	addRuns(t, runs, 1, 1)
	dir := t.TempDir()
	short, other := filepath.Join(dir, "short.duckdb"), filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(short, []byte("DUCK"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("my notes, not a database at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{t.TempDir(), short, other} {
		db, _, err := openLoad(ctx, Config{File: file}, runs)
		if err == nil {
			db.Close()
		}
		if !errors.Is(err, ErrNotStore) || !strings.Contains(fmt.Sprint(err), file) {
			t.Errorf("--db %s: %v, want ErrNotStore naming it", file, err)
		}
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "my notes, not a database at all\n" {
		t.Errorf("the refused file changed: %q (%v)", b, err)
	}
}
