package metrics

import (
	"context"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// A load reads its chunks on fewer DuckDB threads and checks its lines
// with a lazier collector, and puts both back: a query after the load
// runs on every core, and the process's collector is as it was.
func TestALoadPutsThreadsAndCollectorBack(t *testing.T) {
	db := open(t, Options{})
	threads := func() int64 {
		t.Helper()
		var n int64
		if err := db.sql.QueryRow("SELECT current_setting('threads')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.sql.Exec("SET threads = 4"); err != nil {
		t.Fatal(err)
	}
	gc := debug.SetGCPercent(123)
	defer debug.SetGCPercent(gc)
	if _, err := db.Load(context.Background(), filepath.Join(validDir, "basic.jsonl")); err != nil {
		t.Fatal(err)
	}
	if n := threads(); n != 4 {
		t.Errorf("threads after the load: %d, want 4", n)
	}
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GC percent after the load: %d, want 123", p)
	}
	// During the check, the collector was lazier.
	restore := lessGC()
	if p := debug.SetGCPercent(checkGC); p != checkGC {
		t.Errorf("GC percent while checking: %d, want %d", p, checkGC)
	}
	restore()
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GC percent after lessGC: %d, want 123", p)
	}
}
