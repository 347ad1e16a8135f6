package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/metrics"
)

// DefaultMax is the size the stores in the cache directory are kept
// under when Config.Max is 0: past it, the least recently used go.
const DefaultMax int64 = 4 << 30

// DefaultWait is how long Open waits for another process's use of a
// store when Config.Wait is 0.
const DefaultWait = 2 * time.Second

// ErrBusy means another process held the store longer than Config.Wait:
// the caller loads without it (cold, in memory), which answers the same.
var ErrBusy = errors.New("the store is busy")

// ErrNotStore means a store's file (Config.File, retrace --db FILE) is
// something else: a directory, or a file that is not a DuckDB database.
var ErrNotStore = errors.New("not a store")

// ErrUnavailable means the store cannot be kept (its directory cannot be
// made, its lock file cannot be opened): the caller loads cold.
var ErrUnavailable = errors.New("no store can be kept")

// Ext is the extension of a store's database file in the cache.
const Ext = ".duckdb"

// Dir returns the cache directory stores are kept in by default:
// retrace under the user's cache directory ($XDG_CACHE_HOME/retrace, or
// ~/.cache/retrace, on Linux).
func Dir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("store: no cache directory: %w (set XDG_CACHE_HOME, or pass --no-cache)", err)
	}
	return filepath.Join(base, "retrace"), nil
}

// Config says which store Open opens and how.
type Config struct {
	// Dir is the cache directory: the store of a corpus is named there
	// by the corpus's paths (Key). Ignored when File is set.
	Dir string
	// File is a store at a path of the user's (retrace --db FILE): kept
	// where it is, never evicted, and never deleted when another retrace
	// version made it (metrics.ErrStoreVersion is returned instead).
	File string
	// Metrics are the options the database opens with; Open sets Path,
	// ReadOnly and Closer.
	Metrics metrics.Options
	// Wait bounds the wait for another process's use of the store;
	// 0 means DefaultWait.
	Wait time.Duration
	// Max bounds the size of the stores in Dir; 0 means DefaultMax.
	Max int64
}

// LoadFunc loads the corpus into db: metrics.DB.Load, or a load that does
// more in the same pass (detectors.Detect).
type LoadFunc func(db *metrics.DB) (metrics.LoadReport, error)

// Key names the store of a corpus: a hash of its paths, each made
// absolute with its symbolic links resolved, and of the paths as given,
// each list sorted. The rows of a store name their files as the paths
// given spell them (trajectory.Name), so the same runs named another way
// ("runs" and "/home/me/runs") get a store of their own: sharing one,
// each call would take every file of the other for removed and read them
// all again.
func Key(paths []string) string {
	resolved := make([]string, 0, len(paths))
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		resolved = append(resolved, p)
	}
	sort.Strings(resolved)
	resolved = slices.Compact(resolved)
	given := slices.Compact(slices.Sorted(slices.Values(paths)))
	sum := sha256.Sum256([]byte(strings.Join(resolved, "\x00") + "\x01" + strings.Join(given, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// corpus is the sidecar file naming the paths of a cached store, for
// retrace cache info.
type corpus struct {
	Paths []string `json:"paths"`
}

// Open opens the store of paths and brings it up to date with load:
//
// Under a shared lock it opens the store read-only and loads: over an
// unchanged corpus that is a stat per file, and the store answers as it
// is, any number of processes at once. When a file was added, changed or
// removed (metrics.ErrStale) it takes the lock alone, opens the store for
// writing, loads what changed in one DuckDB transaction (a crash leaves
// the store as it was before it), then opens it read-only again under a
// shared lock. The returned database holds that shared lock until Close.
// A lock not had within Config.Wait is ErrBusy: the caller loads cold.
//
// With no paths the store is opened as it is (a --db FILE queried without
// runs); a store that is not there is an error wrapping fs.ErrNotExist.
func Open(ctx context.Context, cfg Config, paths []string, load LoadFunc) (*metrics.DB, metrics.LoadReport, error) {
	var rep metrics.LoadReport
	path, cached, err := cfg.locate(paths)
	if err != nil {
		return nil, rep, err
	}
	if len(paths) == 0 {
		// Without runs the store is queried as it is: one that is not
		// there (a mistyped --db) would be made empty on the spot and
		// answer every query with no rows.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, rep, fmt.Errorf("store %s: %w: there is no store there; give the runs to build it (they are kept there for later calls)", path, fs.ErrNotExist)
		}
	}
	if cfg.File != "" {
		if err := checkStoreFile(path); err != nil {
			return nil, rep, err
		}
	}
	wait := cfg.Wait
	if wait == 0 {
		wait = DefaultWait
	}
	lk, err := openLock(lockPath(path))
	if err != nil {
		return nil, rep, fmt.Errorf("store: %w: %w", ErrUnavailable, err)
	}
	fail := func(err error) (*metrics.DB, metrics.LoadReport, error) {
		lk.Close()
		return nil, rep, err
	}
	opts := cfg.Metrics
	opts.Path = path
	if err := lk.lock(false, wait); err != nil {
		return fail(err)
	}
	// The database closes the lock once it is handed over, not before.
	h := &handover{lk: lk}
	opts.ReadOnly, opts.Closer = true, h
	db, err := metrics.Open(ctx, opts)
	// stale is the read-only database whose load found the store stale:
	// the update goes on from what it listed (metrics.DB.Continue).
	var stale *metrics.DB
	if err == nil {
		if len(paths) == 0 {
			return h.give(db, rep)
		}
		if rep, err = load(db); err == nil {
			return h.give(db, rep)
		}
		db.Close()
		stale = db
	}
	if !errors.Is(err, metrics.ErrStale) && !(cached && errors.Is(err, metrics.ErrStoreVersion)) {
		return fail(err)
	}
	// The update: alone. The shared lock goes first, so that two readers
	// wanting to update do not wait for each other.
	lk.unlock()
	if err := lk.lock(true, wait); err != nil {
		return fail(err)
	}
	if cached && errors.Is(err, metrics.ErrStoreVersion) {
		// Another retrace version's: a cache is made again.
		removeStore(path)
	}
	opts.ReadOnly, opts.Closer = false, nil
	db, err = metrics.Open(ctx, opts)
	if cached && errors.Is(err, metrics.ErrStoreVersion) {
		removeStore(path)
		db, err = metrics.Open(ctx, opts)
	}
	if err != nil {
		return fail(err)
	}
	if stale != nil {
		db.Continue(stale)
	}
	if len(paths) > 0 {
		rep, err = load(db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	if cached {
		evict(cfg.Dir, cfg.max(), path)
	}
	lk.unlock()
	if err := lk.lock(false, wait); err != nil {
		return fail(err)
	}
	opts.ReadOnly, opts.Closer = true, h
	if db, err = metrics.Open(ctx, opts); err != nil {
		return fail(err)
	}
	return h.give(db, rep)
}

// handover is the Closer of a store's database: it closes the lock only
// once the database is handed to the caller, so that closing a database
// Open gives up on keeps the lock Open goes on with.
type handover struct {
	lk    *lockFile
	given bool
}

func (h *handover) give(db *metrics.DB, rep metrics.LoadReport) (*metrics.DB, metrics.LoadReport, error) {
	h.given = true
	touch(h.lk)
	return db, rep, nil
}

// Close closes the lock once the database is handed over.
func (h *handover) Close() error {
	if !h.given {
		return nil
	}
	return h.lk.Close()
}

func (c Config) max() int64 {
	if c.Max > 0 {
		return c.Max
	}
	return DefaultMax
}

// locate returns the store's database file, making the cache directory
// and the corpus sidecar when the store is the cache's.
func (c Config) locate(paths []string) (path string, cached bool, err error) {
	if c.File != "" {
		return c.File, false, nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", false, fmt.Errorf("store: %w: %w", ErrUnavailable, err)
	}
	path = filepath.Join(c.Dir, Key(paths)+Ext)
	side := sidecar(path)
	if _, err := os.Stat(side); err != nil {
		resolved := make([]string, len(paths))
		for i, p := range paths {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			resolved[i] = p
		}
		b, _ := json.Marshal(corpus{Paths: resolved})
		tmp := side + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err == nil {
			os.Rename(tmp, side)
		}
	}
	return path, true, nil
}

// duckdbMagic is what a DuckDB database file holds after its 8-byte
// checksum.
const duckdbMagic = "DUCK"

// checkStoreFile refuses a user's store path (--db FILE) that holds
// something else than a DuckDB database, before DuckDB is asked to open
// it: a directory, or a file of another kind. A path with nothing at it
// is a new store, and an empty file one another retrace may be making.
func checkStoreFile(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	if info.IsDir() {
		return fmt.Errorf("store %s: %w: it is a directory; give a file path (a new one is made there)", path, ErrNotStore)
	}
	if info.Size() == 0 {
		// Another retrace may be making the store there this moment:
		// the lock decides.
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, 8+len(duckdbMagic))
	if _, err := io.ReadFull(f, head); err != nil || string(head[8:]) != duckdbMagic {
		return fmt.Errorf("store %s: %w: the file is not a DuckDB database, and retrace does not overwrite it; give another path (a new one is made there)", path, ErrNotStore)
	}
	return nil
}

func lockPath(path string) string { return path + ".lock" }

func sidecar(path string) string { return strings.TrimSuffix(path, Ext) + ".json" }

// touch records that the store was used now (its lock file's time), for
// the least recently used to go first.
func touch(lk *lockFile) {
	now := time.Now()
	os.Chtimes(lk.f.Name(), now, now)
}

// removeStore deletes a store's database file and DuckDB's files beside
// it; the lock file and the sidecar stay while the store is in use.
func removeStore(path string) {
	os.Remove(path)
	os.Remove(path + ".wal")
	os.RemoveAll(path + ".tmp")
}

// Entry is a store in the cache directory.
type Entry struct {
	// Path is the store's database file.
	Path string `json:"path"`
	// Size is the bytes of its files.
	Size int64 `json:"size"`
	// Corpus are the paths of the runs it holds, as first given.
	Corpus []string `json:"corpus"`
	// LastUsed is when a command last read it.
	LastUsed time.Time `json:"last_used"`
}

// Info lists the stores in dir, the most recently used first. A missing
// dir holds none.
func Info(dir string) ([]Entry, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*"+Ext))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, path := range matches {
		e := Entry{Path: path, Corpus: []string{}}
		for _, f := range []string{path, path + ".wal"} {
			if info, err := os.Stat(f); err == nil {
				e.Size += info.Size()
				if e.LastUsed.IsZero() {
					e.LastUsed = info.ModTime()
				}
			}
		}
		if info, err := os.Stat(lockPath(path)); err == nil {
			e.LastUsed = info.ModTime()
		}
		if b, err := os.ReadFile(sidecar(path)); err == nil {
			var c corpus
			if json.Unmarshal(b, &c) == nil && c.Paths != nil {
				e.Corpus = c.Paths
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUsed.After(out[j].LastUsed) })
	return out, nil
}

// Clean deletes the stores in dir last used before cutoff (every store
// with a zero cutoff) and returns those deleted and those left because a
// process was using them.
func Clean(dir string, cutoff time.Time) (removed, busy []Entry, err error) {
	entries, err := Info(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !cutoff.IsZero() && !e.LastUsed.Before(cutoff) {
			continue
		}
		if remove(e) {
			removed = append(removed, e)
		} else {
			busy = append(busy, e)
		}
	}
	return removed, busy, nil
}

// remove deletes a store and its files unless a process uses it, and
// reports whether it did.
func remove(e Entry) bool {
	lk, err := openLock(lockPath(e.Path))
	if err != nil {
		return false
	}
	defer lk.Close()
	if lk.lock(true, 0) != nil {
		return false
	}
	removeStore(e.Path)
	// The lock files stay (empty): a process waiting on them must find
	// the same files the next one locks.
	os.Remove(sidecar(e.Path))
	return true
}

// evict deletes the least recently used stores of dir, but keep, until
// they all fit in max; a store in use stays.
func evict(dir string, max int64, keep string) {
	entries, err := Info(dir)
	if err != nil {
		return
	}
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	for i := len(entries) - 1; i >= 0 && total > max; i-- {
		if e := entries[i]; e.Path != keep && remove(e) {
			total -= e.Size
		}
	}
}
