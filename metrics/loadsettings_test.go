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

// A load checks its lines under a soft limit on the Go heap and reads
// them into a store under a lower DuckDB memory_limit, and puts both
// back: the process's limit is as it was, and queries after the load run
// at boundedMemory.
func TestALoadPutsMemoryLimitsBack(t *testing.T) {
	const limit = 3 << 30
	was := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(was)
	db := open(t, Options{Path: filepath.Join(t.TempDir(), "s.duckdb")})
	if _, err := db.Load(context.Background(), filepath.Join(validDir, "basic.jsonl")); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("Go memory limit after the load: %d, want %d", got, int64(limit))
	}
	if got := rows(t, db, "SELECT current_setting('memory_limit')"); got[0] != "476.8 MiB" {
		t.Errorf("memory_limit after a store's load: %s, want 476.8 MiB (boundedMemory)", got[0])
	}
	restore := lessGC()
	if got := debug.SetMemoryLimit(-1); got != checkMemory {
		t.Errorf("Go memory limit while checking: %d, want %d", got, checkMemory)
	}
	restore()
	// A lower limit the process set is kept.
	debug.SetMemoryLimit(64 << 20)
	restore = lessGC()
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("Go memory limit while checking under a lower one: %d, want %d", got, 64<<20)
	}
	restore()
	// The limit lowered during the load is DuckDB's, not the user's.
	ctx := context.Background()
	restoreDB, err := db.boundLoad(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db, "SELECT current_setting('memory_limit')"); got[0] != "286.1 MiB" {
		t.Errorf("memory_limit during a store's load: %s, want 286.1 MiB (loadMemory)", got[0])
	}
	restoreDB()
	own := open(t, Options{Path: filepath.Join(t.TempDir(), "o.duckdb"), MemoryLimit: "2GB"})
	restoreDB, err = own.boundLoad(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, own, "SELECT current_setting('memory_limit')"); got[0] != "1.8 GiB" {
		t.Errorf("memory_limit during a load with a limit of its own: %s, want 1.8 GiB (2GB)", got[0])
	}
	restoreDB()
}
