package metrics

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/scratch"
	"github.com/retrace-dev/retrace/trajectory"
)

// ParquetExt is the extension of the Parquet files Load reads and
// ExportParquet writes.
const ParquetExt = ".parquet"

// ErrSeq means an event's seq is not greater than every seq of its session
// before it, in its file or in a file before it: a duplicated or replayed
// line, or a copy of a session's file, which loaded would be counted twice.
var ErrSeq = errors.New("seq does not increase")

// ErrDuplicateSession means a session is in two files of one load (the
// same run given twice, or a copy of its file) and Options.StrictDupes
// refuses that.
var ErrDuplicateSession = errors.New("duplicate session")

// Duplicate is a session found in two files of one load: it is loaded
// once, from the file that comes first in the load's order (Kept), and its
// events in File are left out.
type Duplicate struct {
	// Session is the session id.
	Session string
	// File and Line are where the copy starts: the file left out of the
	// session, as trajectory.Name names it, and the line of its first
	// event there.
	File string
	Line int
	// Kept is the file the session was loaded from.
	Kept string
}

// dupState gathers what a load finds of duplicate sessions.
type dupState struct {
	// byFile has, per index of a file being loaded, the sessions whose
	// events in it are left out.
	byFile map[int]map[string]bool
	list   []Duplicate
	// strict are the duplicates as errors, with Options.StrictDupes.
	strict []error
	// priorOf returns, of the sessions named, those a store already
	// holds from files the load does not read again (or reads from where
	// it stopped): they come first. Nil in memory.
	priorOf func(sessions []string) (map[string]priorSession, error)
	// prior are all of those, for a load that feeds an Observer (see
	// newFeed); nil otherwise.
	prior map[string]priorSession
}

// priorSession is a session a kept database holds: the highest seq and
// the file.
type priorSession struct {
	max  int64
	file string
}

func (d *dupState) add(file int, dup Duplicate) {
	if d.byFile == nil {
		d.byFile = map[int]map[string]bool{}
	}
	if d.byFile[file] == nil {
		d.byFile[file] = map[string]bool{}
	}
	d.byFile[file][dup.Session] = true
	d.list = append(d.list, dup)
}

// FileReport says what Load did with one file.
type FileReport struct {
	// File names the input as messages do (trajectory.Name).
	File string
	// Events is the number of events loaded.
	Events int
	// Skipped counts the malformed lines left out (Lenient only).
	Skipped int
	// FirstSkipped is the first skipped line's error, nil when none.
	FirstSkipped error
	// Dropped counts the events left out because their seq repeats or goes
	// back (Lenient only); each event is counted once.
	Dropped int
	// FirstDropped is the first dropped event's error, nil when none.
	FirstDropped error
	// Duplicates counts the events left out because their session was
	// loaded from an earlier file (LoadReport.Duplicates names them).
	Duplicates int
	// Err says why nothing of the file was loaded (Lenient only): a
	// *trajectory.FileError for a file that cannot be read or holds no
	// event.
	Err error
	// Warnings are the decoder's warnings, such as a torn last line.
	Warnings []trajectory.Warning
	// lines is the number of newlines in the file up to where it was
	// read, which a store remembers.
	lines int
}

// LoadReport says what Load did.
type LoadReport struct {
	// Files are the trajectory inputs, in sorted order.
	Files []FileReport
	// Parquet are the Parquet files read.
	Parquet []string
	// NotRegular are the entries of directories and globs left out because
	// they are not regular files (named pipes, sockets, devices).
	NotRegular []trajectory.Warning
	// Events counts the events loaded from both.
	Events int
	// Duplicates are the sessions found in two files, each loaded once,
	// in the load's order.
	Duplicates []Duplicate
	// Unchanged are the trajectory files a store (Options.Path) already
	// held as they are now (same path, size, modification time and
	// inode), and so were not opened; Files leaves them out.
	Unchanged []string
	// Held are the reports of the unchanged files whose last read had
	// something to say (warnings, skipped lines, dropped events, copies
	// left out), as it said it, for a caller to say again; their
	// duplicates are in Duplicates. Events counts nothing of them.
	Held []FileReport
}

// Skipped returns the number of lines left out over all files.
func (r LoadReport) Skipped() int {
	n := 0
	for _, f := range r.Files {
		n += f.Skipped
	}
	return n
}

// LoadError is a strict load refused because of bad input. It holds the
// first problem of every bad file, so one bad file does not hide the state
// of the others: a *trajectory.LineError for a malformed line or a seq that
// does not increase (ErrSeq), a *trajectory.FileError for a file that
// cannot be read or holds no event. errors.As finds each in it.
type LoadError struct {
	// Problems has one error per bad file.
	Problems []error
}

// maxListed bounds the files a LoadError message names.
const maxListed = 10

// Error implements error.
func (e *LoadError) Error() string {
	files := "files"
	if len(e.Problems) == 1 {
		files = "file"
	}
	var b strings.Builder
	dupes, copies := 0, 0
	for _, p := range e.Problems {
		var c *exportCopy
		switch {
		case errors.As(p, &c):
			copies++
		case errors.Is(p, ErrDuplicateSession):
			dupes++
		}
	}
	switch {
	case copies > 0 && copies+dupes == len(e.Problems):
		fmt.Fprintf(&b, "load refused: %s both in a Parquet export and in another input", plural(copies, "session"))
	case dupes == len(e.Problems):
		fmt.Fprintf(&b, "load refused: %s in two files (--strict-dupes)", plural(dupes, "session"))
	default:
		fmt.Fprintf(&b, "load refused: %d bad %s (fix them, or pass --lenient to skip bad lines, drop repeated seqs, leave out unreadable and empty files, and load the rest)",
			len(e.Problems), files)
	}
	for i, p := range e.Problems {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... and %d more files", len(e.Problems)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems.
func (e *LoadError) Unwrap() []error { return e.Problems }

// Progress tells a long load's caller how far it is. A load checks every
// trajectory line first (Phase "check"; Done and Total count bytes of the
// input files), then has DuckDB read the lines that passed (Phase "load";
// bytes of those lines). An export then reports the events it has written
// (Phase "export"; events, not bytes), after each part (copyParquet).
type Progress struct {
	Phase       string
	Done, Total int64
	// StagedPeak is the most bytes of checked lines the load has had
	// staged on disk at once so far (in its temporary directory, for
	// DuckDB's read_json). Each chunk is deleted as soon as DuckDB has
	// read it, so it is bounded by (2 × check workers + 2) × 256 MB, 1.5 GB
	// on two cores, whatever the size of the input (the staged lines are
	// about 1.2 × the input).
	StagedPeak int64
}

// Load reads the runs paths name: trajectory files (files, directories and
// globs, as trajectory.Expand resolves them) and Parquet files written by
// ExportParquet (*.parquet files, globs ending in .parquet, and the Parquet
// files below a directory). A trajectory file loaded before into the same
// database is replaced, so loading twice does not double count.
//
// A store (Options.Path) answers for exactly the runs each load is
// given: it opens no file whose stat did not change, reads a file that
// only grew from where it stopped, reads again a file that changed (its
// old rows deleted first), drops the rows of every file the load is not
// given, and refreshes its derived tables for the sessions it changed
// (doc.go, The store); Parquet inputs are read again every time. A
// session that a file it holds unchanged holds counts as coming first in
// the duplicate check. A load that changes nothing writes nothing; a
// store opened read-only returns ErrStale instead of changing anything.
//
// A session whose seqs in a file overlap those of an earlier file in the
// load's order (the same run given twice, a copy of its file) is loaded
// once, from the earlier file, and listed in LoadReport.Duplicates; with
// Options.StrictDupes the load is refused instead (ErrDuplicateSession).
//
// A trajectory input may also be a named pipe or device named explicitly,
// or "-" for Options.Stdin: those are read once, as streams. Entries of
// directories and globs that are not regular files are left out and listed
// in LoadReport.NotRegular, since reading a named pipe nobody writes to
// would wait forever.
//
// Every trajectory line is checked with the trajectory Decoder first, and
// every event's seq must be greater than the seqs of its session before it,
// as validate checks within a file; across files too, taken in sorted
// order, since a session is recorded in one file and the same session in a
// second file is a copy. In strict mode (the default) a malformed line, a seq that
// repeats or goes back, a file that cannot be read or one without any event
// refuses the whole load with a *LoadError naming the first problem of
// every bad file, and nothing is loaded: a metric over part of the data
// would look complete. With Options.Lenient the bad lines are skipped, the
// events with a repeated seq dropped (so each is counted once), the files
// that cannot be read or hold no event left out, and all of it counted per
// file.
func (db *DB) Load(ctx context.Context, paths ...string) (LoadReport, error) {
	return db.load(ctx, nil, paths)
}

// load is Load, feeding obs when it is not nil.
func (db *DB) load(ctx context.Context, obs Observer, paths []string) (LoadReport, error) {
	// Metrics prepared over the rows before the load would plan with stale
	// statistics (see Metric).
	db.dropPrepared()
	defer db.dropPrepared()
	var rep LoadReport
	src, err := db.sources(paths)
	if err != nil {
		return rep, err
	}
	// A read-only store that is stale keeps the listing for the update
	// (see Continue).
	stale := func() (LoadReport, error) {
		db.listed = &listing{paths: slices.Clone(paths), src: src}
		return rep, fmt.Errorf("load: %w", ErrStale)
	}
	// A Parquet lake is read in place, not copied (lake.go).
	if rep, ok, err := db.loadInPlace(ctx, src); ok || err != nil {
		return rep, err
	}
	if err := db.settleLake(ctx); err != nil {
		return rep, err
	}
	all := src.jsonl.Files
	plan, err := db.planKept(ctx, all, obs != nil)
	if err != nil {
		return rep, err
	}
	if plan.stale {
		return stale()
	}
	files := plan.read
	rep.Unchanged = names(plan.unchanged)
	rep.Parquet, rep.NotRegular = src.parquet, append(src.jsonl.Skipped, src.skipped...)
	problems := src.jsonl.Problems
	rep.Held, rep.Duplicates = plan.said()
	store := db.opts.Path != ""
	if store && plan.quiet() && len(src.parquet) == 0 && len(problems) == 0 && !db.fromParquet {
		// Nothing changed: no transaction, so the store's file does not
		// change either.
		return rep, nil
	}
	if db.opts.ReadOnly {
		return stale()
	}
	dups := &dupState{}
	// Before the transaction takes the one connection.
	size := inputSize(files)
	if err := db.capBigLoad(ctx, size); err != nil {
		return rep, err
	}
	restore, err := db.boundLoad(ctx)
	if err != nil {
		return rep, err
	}
	// Deferred before the transaction's Rollback, so run after it, on the
	// connection the transaction no longer holds.
	defer restore()
	small := store && size <= smallUpdateBytes
	if small {
		one, err := db.oneThread(ctx)
		if err != nil {
			return rep, err
		}
		defer one()
	}
	// DuckDB reads each staged chunk as soon as it is written, inside the
	// load's transaction: a refused load rolls it back, and nothing is
	// loaded.
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	defer tx.Rollback()
	// whole are the files read whole, held those of them the store held
	// rows of (a new file has none to delete), resumed those read from
	// where the store stopped.
	var whole, held, resumed []string
	for _, f := range files {
		name := trajectory.Name(f)
		_, was := plan.held[name]
		switch _, ok := plan.resume[name]; {
		case ok:
			resumed = append(resumed, name)
		case was || plan.held == nil:
			held = append(held, name)
			fallthrough
		default:
			whole = append(whole, name)
		}
	}
	scan := len(src.parquet) > 0 || db.fromParquet
	// The sessions whose derived rows change: those of the rows deleted
	// now and of the rows read (see refresh).
	var scope []string
	if store && !scan {
		if scope, err = heldSessions(ctx, tx, append(append(slices.Clone(plan.gone), held...), resumed...)); err != nil {
			return rep, err
		}
	}
	if err := db.forget(ctx, tx, plan.gone, names(all), scan); err != nil {
		return rep, err
	}
	// Replace what an earlier load of the same files left; a new database
	// has nothing to delete. A grown file keeps its lines up to where the
	// store stopped, and loses the rest (a last line without its newline,
	// read again with the bytes after it).
	var loaded bool
	// A store's store_sessions has an entry for every file and session
	// it holds rows of, a few thousand rows to look at instead of a
	// union of every table of events; not while the store holds rows
	// from Parquet or reads some (see indexSessions), or files are gone
	// (their rows deleted now, their entries later).
	exists := "SELECT EXISTS (SELECT 1 FROM raw_events)"
	if store && !scan && len(plan.gone) == 0 {
		exists = "SELECT EXISTS (SELECT 1 FROM store_sessions)"
	}
	if err := tx.QueryRowContext(ctx, exists).Scan(&loaded); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	if loaded {
		if err := deleteFiles(ctx, tx, held, typeTable); err != nil {
			return rep, err
		}
		if err := deleteTails(ctx, tx, plan.resume); err != nil {
			return rep, err
		}
	}
	// Sessions held before: none in a store that held no rows, whose
	// first load asked for them all the same (the 10k sessions and 10k
	// files of 1M events in two IN lists), which took 60 of the 75 s of
	// its check.
	// prior is set once a session read now turns out to have rows in a
	// file the store keeps.
	var prior bool
	if store && loaded {
		others, err := otherFiles(ctx, tx, whole, plan.gone, plan.resume, scan)
		if err != nil {
			return rep, err
		}
		dups.priorOf = func(sessions []string) (map[string]priorSession, error) {
			p, err := priorSessions(ctx, tx, sessions, others, plan.resume, scan)
			prior = prior || len(p) > 0
			return p, err
		}
		if obs != nil {
			// An observed load resumes no file (see planKept).
			if dups.prior, err = storeSessions(ctx, tx, others, scan); err != nil {
				return rep, err
			}
		}
	}
	// A store that holds rows reads the lines into tables of their own
	// first (added.go).
	added := store && loaded && !scan
	into := typeTable
	if added {
		if _, err := tx.ExecContext(ctx, addedSQL()); err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
		into = addedTable
	}
	staged, err := scratch.Make(db.opts.TempDir, "retrace-metrics-")
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	defer staged.Remove()
	tmp := staged.Path
	disk := &diskUse{}
	reports, bad, err := db.checkAll(ctx, tx, files, plan, tmp, obs, dups, disk, into)
	if err != nil {
		return rep, err
	}
	rep.Duplicates = append(rep.Duplicates, dups.list...)
	if len(dups.strict) > 0 {
		// --strict-dupes refuses even a lenient load: a duplicate is a
		// mistake in the paths given, not damage in a file.
		return rep, &LoadError{Problems: append(dups.strict, problems...)}
	}
	if problems = append(problems, bad...); len(problems) > 0 {
		if !db.opts.Lenient {
			slices.SortStableFunc(problems, func(a, b error) int { return strings.Compare(problemFile(a), problemFile(b)) })
			return rep, &LoadError{Problems: problems}
		}
		for _, p := range src.jsonl.Problems {
			var fe *trajectory.FileError
			errors.As(p, &fe)
			reports = append(reports, FileReport{File: fe.File, Err: p})
		}
		slices.SortFunc(reports, func(a, b FileReport) int { return strings.Compare(a.File, b.File) })
	}
	if err := db.remember(ctx, tx, plan, files, reports, dups.list); err != nil {
		return rep, err
	}
	rep.Files = reports
	for _, fr := range reports {
		rep.Events += fr.Events
	}
	if err := parquetCopies(ctx, tx, src.parquet, names(all)); err != nil {
		return rep, err
	}
	n, err := insertParquet(ctx, tx, src.parquet)
	if err != nil {
		return rep, err
	}
	rep.Events += n
	switch {
	case added:
		if err := indexAdded(ctx, tx, append(append(slices.Clone(held), resumed...), plan.gone...), resumed); err != nil {
			return rep, err
		}
		// Sessions all of whose rows were added (only new files, holding
		// no session a kept file holds) have their derived rows selected
		// from the added rows; any other change, from the store's rows.
		fresh := len(held) == 0 && len(resumed) == 0 && len(plan.gone) == 0 && !prior
		if fresh {
			if err := refreshAdded(ctx, tx); err != nil {
				return rep, fmt.Errorf("load: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, moveAddedSQL()); err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
		if !fresh {
			if err := db.refresh(ctx, tx, scope, names(files), false, false); err != nil {
				return rep, fmt.Errorf("load: %w", err)
			}
		}
	case store:
		if err := indexSessions(ctx, tx, names(files), plan.gone, scan || !loaded); err != nil {
			return rep, err
		}
		if err := db.refresh(ctx, tx, scope, names(files), scan || !loaded, len(src.parquet) > 0); err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
	default:
		if err := db.changed(ctx, tx); err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
	}
	if err := dropFileSets(ctx, tx); err != nil {
		return rep, err
	}
	if err := tx.Commit(); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	if small {
		// DuckDB would write the update into the store's tables when the
		// database closes; written now, it runs on the one thread too.
		if _, err := db.sql.ExecContext(ctx, "CHECKPOINT"); err != nil {
			return rep, fmt.Errorf("load: %w", err)
		}
	}
	db.fromParquet = len(src.parquet) > 0
	if store {
		db.heldMode = db.mode()
	}
	return rep, nil
}

// listing is the runs a load was given, as sources listed them.
type listing struct {
	paths []string
	src   inputs
}

// Continue hands db what a load of stale, a read-only store of the same
// file that found itself stale (ErrStale), listed of the runs it was
// given, so that the load that brings the store up to date, of the same
// paths, does not walk them again: listing a corpus of 10k files took
// about 0.02 CPU-s, a tenth of what adding 1% new files to a store of 1M
// events costs. The listing is used once, by the next load, and only for
// the same paths; a file that changed since is still seen, each file
// being examined again, and one added since is read by the next load.
func (db *DB) Continue(stale *DB) {
	db.listed, stale.listed = stale.listed, nil
}

// sources returns the inputs paths name: the listing Continue handed
// over, when it is of the same paths, or a new one.
func (db *DB) sources(paths []string) (inputs, error) {
	if l := db.listed; l != nil {
		db.listed = nil
		if slices.Equal(l.paths, paths) {
			return l.src, nil
		}
	}
	return sources(paths)
}

// problemFile returns the file a LoadError's problem names.
func problemFile(err error) string {
	var le *trajectory.LineError
	if errors.As(err, &le) {
		return le.File
	}
	var fe *trajectory.FileError
	if errors.As(err, &fe) {
		return fe.File
	}
	return ""
}

// inputs are the sources of a load.
type inputs struct {
	jsonl   trajectory.Inputs
	parquet []string
	// skipped are the Parquet entries left out as not regular files.
	skipped []trajectory.Warning
}

// sources splits paths into trajectory inputs and Parquet files.
func sources(paths []string) (inputs, error) {
	var in inputs
	var runs []string
	for _, p := range paths {
		info, statErr := os.Stat(p)
		switch {
		case p == trajectory.Stdin:
			runs = append(runs, p)
		case statErr == nil && info.IsDir():
			var pq []string
			js := 0
			// Errors are left to trajectory.ExpandInputs, which walks the
			// same directory and reports each unreadable entry once.
			filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
				switch {
				case err != nil || d.IsDir():
				case strings.HasSuffix(f, ParquetExt):
					if !regular(f, d) {
						in.skipped = append(in.skipped, trajectory.Warning{File: f, Msg: "skipped: not a regular file; only regular files are read from directories"})
						break
					}
					pq = append(pq, f)
				case strings.HasSuffix(f, trajectory.Ext):
					js++
				}
				return nil
			})
			in.parquet = append(in.parquet, pq...)
			if js > 0 || len(pq) == 0 {
				// trajectory.ExpandInputs says what to do with a directory
				// holding neither.
				runs = append(runs, p)
			}
		case strings.HasSuffix(p, ParquetExt) && statErr == nil:
			in.parquet = append(in.parquet, p)
		case strings.HasSuffix(p, ParquetExt) && strings.ContainsAny(p, "*?["):
			m, err := filepath.Glob(p)
			if err != nil {
				return inputs{}, fmt.Errorf("%s: bad glob pattern: %w", p, err)
			}
			if len(m) == 0 {
				return inputs{}, fmt.Errorf("%s: %w: the pattern matched no files", p, trajectory.ErrNoRuns)
			}
			in.parquet = append(in.parquet, m...)
		default:
			runs = append(runs, p)
		}
	}
	slices.Sort(in.parquet)
	in.parquet = slices.Compact(in.parquet)
	if len(runs) > 0 {
		var err error
		if in.jsonl, err = trajectory.ExpandInputs(runs...); err != nil {
			return inputs{}, err
		}
	}
	return in, nil
}

// regular reports whether the directory entry d at f is a regular file or
// a symlink to one.
func regular(f string, d fs.DirEntry) bool {
	if d.Type()&fs.ModeSymlink == 0 {
		return d.Type().IsRegular()
	}
	info, err := os.Stat(f)
	return err == nil && info.Mode().IsRegular()
}

// chunk is a staged file of checked lines of one event type, or several
// (more), read in one statement.
type chunk struct {
	path string
	more []string
	typ  trajectory.EventType
	size int64
}

// paths returns the files of c.
func (c chunk) paths() []string { return append([]string{c.path}, c.more...) }

// stageBudget bounds the bytes of the chunks one check worker has open:
// when they reach it, the largest is closed and handed to the inserter,
// which reads it into DuckDB while the workers go on checking and then
// deletes it. It is what bounds the staging's disk use (see diskUse),
// whatever the input's size. It is large because reading chunks while
// checking costs CPU: on two cores, 1M events took 14.0-14.4 CPU-s to load
// with a 64 MB budget (the chunks read as the check went on) against
// 12.2-12.4 CPU-s with the chunks read after the check, DuckDB's threads
// and the check workers competing for the same cores; so a corpus whose
// staging fits the budget is read after its check, as before, and only a
// larger one is read as it goes. DuckDB reads a few large files much
// faster than many small ones, and a file faster the fewer columns it
// looks for, so a chunk holds one event type. Tests make it small.
var stageBudget int64 = 256 << 20

// stage writes checked lines into chunk files, one open per event type,
// every line with a "file" member naming where it came from and a "line"
// member, its line number in the file, for findings to point at; the file
// column then needs no renaming afterwards. Closed chunks go to the
// inserter, which reads them into DuckDB and deletes them.
type stage struct {
	dir, name string
	open      map[trajectory.EventType]*chunkWriter
	// openBytes are the bytes of the open chunks.
	openBytes int64
	n         int
	ins       *inserter
	disk      *diskUse
	// scratch holds a line utcTS respelled.
	scratch []byte
}

type chunkWriter struct {
	f *os.File
	w *bufio.Writer
	chunk
}

// utcTS returns line with its ts value, line[start:end], spelled as ts,
// in UTC, unless it is spelled so already: DuckDB reads the chunks' ts as
// TIMESTAMP, which ignores an offset. The recorder writes UTC, so a line
// is only copied when another writer used an offset or an escape.
func (st *stage) utcTS(line []byte, start, end int, ts time.Time) []byte {
	if v := line[start:end]; len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && trajectory.CanonicalTS(v[1:len(v)-1]) {
		return line
	}
	b := append(append(st.scratch[:0], line[:start]...), '"')
	b = append(ts.UTC().AppendFormat(b, time.RFC3339Nano), '"')
	st.scratch = append(b, line[end:]...)
	return st.scratch
}

func (st *stage) write(typ trajectory.EventType, line, file []byte, lineNo int) error {
	cw := st.open[typ]
	if cw == nil {
		path := filepath.Join(st.dir, fmt.Sprintf("%s-%s-%d%s", st.name, typ, st.n, trajectory.Ext))
		st.n++
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		cw = &chunkWriter{f: f, w: bufio.NewWriterSize(f, 64<<10), chunk: chunk{path: path, typ: typ}}
		if st.open == nil {
			st.open = map[trajectory.EventType]*chunkWriter{}
		}
		st.open[typ] = cw
	}
	// The Decoder reads invalid UTF-8 in strings as U+FFFD, as encoding/json
	// does, but DuckDB rejects it; the staged line gets the same
	// replacement.
	if !utf8.Valid(line) {
		line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
	}
	line = fixSurrogates(line)
	// The line decoded as one JSON object, so it ends with its closing brace.
	line = bytes.TrimRight(line, " \t\r")
	cw.w.Write(line[:len(line)-1])
	cw.w.WriteString(`,"file":`)
	cw.w.Write(file)
	cw.w.WriteString(`,"line":`)
	n, _ := cw.w.WriteString(strconv.Itoa(lineNo))
	cw.w.WriteString("}\n")
	size := int64(len(line) + len(file) + n + 17)
	cw.size += size
	st.openBytes += size
	st.disk.add(size)
	for st.openBytes >= stageBudget {
		var largest *chunkWriter
		for _, c := range st.open {
			if largest == nil || c.size > largest.size {
				largest = c
			}
		}
		if err := st.end(largest.typ); err != nil {
			return err
		}
	}
	return nil
}

// fixSurrogates returns line with every lone surrogate escape (\uD800 to
// \uDFFF not in a high-low pair) spelled \ufffd, which is how the Decoder
// (as encoding/json) reads it; DuckDB refuses the line otherwise. The rest
// of the line is left as it is, pairs included. Such escapes are rare, so
// a line without any is returned as it is, unscanned but for one search.
func fixSurrogates(line []byte) []byte {
	if !bytes.Contains(line, []byte(`\u`)) {
		return line
	}
	var out []byte
	last := 0
	for i := 0; i+1 < len(line); i++ {
		if line[i] != '\\' {
			continue
		}
		if line[i+1] != 'u' {
			i++ // an escaped character, a backslash among them
			continue
		}
		r, ok := hex4(line[i+2:])
		switch {
		case !ok || !utf16.IsSurrogate(r):
		case r < 0xDC00 && i+12 <= len(line) && line[i+6] == '\\' && line[i+7] == 'u':
			if r2, ok := hex4(line[i+8:]); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
				i += 6 // a pair: past its high half
				break
			}
			fallthrough
		default:
			out = append(append(out, line[last:i]...), `\ufffd`...)
			last = i + 6
		}
		i += 5
	}
	if out == nil {
		return line
	}
	return append(out, line[last:]...)
}

// hex4 reads the four hex digits opening s as a UTF-16 code unit.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[:4]), 16, 16)
	return rune(n), err == nil
}

// end closes the chunk of typ and hands it to the inserter.
func (st *stage) end(typ trajectory.EventType) error {
	c, err := st.finish(typ)
	if err != nil {
		return err
	}
	st.ins.put(c)
	return nil
}

// finish closes the chunk of typ and returns it.
func (st *stage) finish(typ trajectory.EventType) (chunk, error) {
	cw := st.open[typ]
	delete(st.open, typ)
	st.openBytes -= cw.size
	err := cw.w.Flush()
	if cerr := cw.f.Close(); err == nil {
		err = cerr
	}
	return cw.chunk, err
}

// close closes every open chunk and returns them, for the caller to
// hand over with those of the other workers (see putTogether).
func (st *stage) close() ([]chunk, error) {
	var errs []error
	var out []chunk
	for typ := range st.open {
		c, err := st.finish(typ)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// putTogether hands the chunks the workers had open at the end of a
// check to the inserter, those of one event type together: one
// read_json statement per type instead of one per type and worker. Each
// statement has a fixed cost (about 1.5 ms of CPU), which is most of
// what reading the lines of a few new files into a store costs.
func (in *inserter) putTogether(chunks []chunk) {
	byType := map[trajectory.EventType]*chunk{}
	for _, c := range chunks {
		if b, ok := byType[c.typ]; ok {
			b.more = append(b.more, c.path)
			b.size += c.size
			continue
		}
		c := c
		byType[c.typ] = &c
	}
	for _, t := range trajectory.EventTypes() {
		if c, ok := byType[t]; ok {
			in.put(*c)
		}
	}
}

// diskUse counts the bytes a load stages: in all, and the most on disk at
// once, which the stage budget and the inserter's queue bound (see
// LoadReport.StagedPeakBytes).
type diskUse struct {
	now, total, peak atomic.Int64
}

func (d *diskUse) add(n int64) {
	d.total.Add(n)
	now := d.now.Add(n)
	for {
		p := d.peak.Load()
		if now <= p || d.peak.CompareAndSwap(p, now) {
			return
		}
	}
}

func (d *diskUse) remove(n int64) { d.now.Add(-n) }

// inserter reads the chunks the check workers close into DuckDB, one
// read_json statement each, within the load's transaction, while the
// workers go on checking, and deletes each chunk once read. Its queue
// holds one chunk, so a worker waits when DuckDB is behind: the staging
// on disk is at most the workers' open chunks (stageBudget each), the
// chunk each may wait to hand over, the one queued and the one read.
type inserter struct {
	db       *DB
	ctx      context.Context
	tx       *sql.Tx
	disk     *diskUse
	into     func(trajectory.EventType) string
	chunks   chan chunk
	done     chan struct{}
	err      error
	inserted atomic.Int64
}

// startInserter starts an inserter for one check pass, inserting the
// events of each type into the table into names.
func (db *DB) startInserter(ctx context.Context, tx *sql.Tx, disk *diskUse, into func(trajectory.EventType) string) *inserter {
	in := &inserter{db: db, ctx: ctx, tx: tx, disk: disk, into: into, chunks: make(chan chunk, 1), done: make(chan struct{})}
	go in.run()
	return in
}

func (in *inserter) put(c chunk) { in.chunks <- c }

// readThreads returns the DuckDB threads the inserter reads chunks with:
// one fewer than the cores the check uses, at least one. The thread that
// runs a DuckDB statement waits for the statement's other threads by
// asking for work in a loop, so a read_json on every core of a 2-core
// machine spends up to a core spinning: reading the chunks of 1M events
// took 2.6-2.8 CPU-s with 2 threads against 1.6-1.75 CPU-s with 1
// (BenchmarkColdPhases), and a cold load and every metric 6.8-7.4 CPU-s
// against 5.7-5.8, in less wall time too.
func readThreads() int64 { return int64(max(runtime.GOMAXPROCS(0)-1, 1)) }

func (in *inserter) run() {
	defer close(in.done)
	var threads int64
	if err := in.tx.QueryRowContext(in.ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil {
		in.err = fmt.Errorf("load: %w", err)
	}
	if n := readThreads(); in.err == nil && threads > n {
		if _, err := in.tx.ExecContext(in.ctx, "SET threads = "+strconv.FormatInt(n, 10)); err != nil {
			in.err = fmt.Errorf("load: %w", err)
		} else {
			defer func() {
				// The setting is the connection's: a query after the
				// load runs on every core again. A canceled load has
				// rolled its transaction back, freeing the connection.
				set := "SET threads = " + strconv.FormatInt(threads, 10)
				_, err := in.tx.ExecContext(context.WithoutCancel(in.ctx), set)
				if errors.Is(err, sql.ErrTxDone) {
					_, err = in.db.sql.ExecContext(context.WithoutCancel(in.ctx), set)
				}
				if err != nil && in.err == nil {
					in.err = fmt.Errorf("load: %w", err)
				}
			}()
		}
	}
	for c := range in.chunks {
		if in.err == nil {
			q := "INSERT INTO " + in.into(c.typ) + " SELECT * FROM read_json([" + strings.Join(quoteAll(c.paths()), ", ") + "]" +
				", format = 'newline_delimited', columns = " + columnsSQL(tableColumns(c.typ)) + ")"
			if _, err := in.tx.ExecContext(in.ctx, q); err != nil {
				in.err = fmt.Errorf("load: %w", err)
			}
		}
		// After a failure the chunks are only deleted, so that no worker
		// waits on a queue nobody reads.
		for _, p := range c.paths() {
			os.Remove(p)
		}
		in.disk.remove(c.size)
		in.inserted.Add(c.size)
	}
}

// finish waits for the chunks handed over to be read, reporting them as
// the load phase, and returns the first error.
func (in *inserter) finish() error {
	close(in.chunks)
	in.db.progress("load", in.inserted.Load(), in.disk.total.Load(), in.disk)
	<-in.done
	in.db.progress("load", in.inserted.Load(), in.disk.total.Load(), in.disk)
	return in.err
}

// smallUpdateBytes is the input size up to which a load into a store
// runs DuckDB on one thread from its first statement to its checkpoint
// (oneThread): an update of a few files, such as 1% new files of a
// corpus. Every statement of such an update touches a few thousand rows,
// too few for a second thread to take a part, and the thread running a
// statement waits for its other threads by asking for work in a loop (see
// readThreads): on two cores, adding 1% new files to a store of 1M events
// spent 0.12 CPU-s of its 0.55-0.6 in DuckDB threads other than the one
// running the statement, mostly so.
const smallUpdateBytes = 64 << 20

// oneThread sets DuckDB's threads to 1 and returns what sets them back.
// It runs on the one connection, so it and what it returns must run
// outside the load's transaction.
func (db *DB) oneThread(ctx context.Context) (func(), error) {
	var threads int64
	if err := db.sql.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if threads <= 1 {
		return func() {}, nil
	}
	if _, err := db.sql.ExecContext(ctx, "SET threads = 1"); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return func() {
		// A failure leaves one thread: slower queries after the load,
		// never a wrong answer.
		db.sql.ExecContext(context.WithoutCancel(ctx), "SET threads = "+strconv.FormatInt(threads, 10))
	}, nil
}

// inputSize returns the total size of the regular files among files.
func inputSize(files []string) int64 {
	var n int64
	for _, f := range files {
		if info, err := os.Stat(f); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// deleteFiles deletes the rows loaded from the files named from the
// tables of events table names (typeTable, or a store's addedTable).
func deleteFiles(ctx context.Context, tx *sql.Tx, names []string, table func(trajectory.EventType) string) error {
	if len(names) == 0 {
		return nil
	}
	in, err := fileSet(ctx, tx, "retrace_files", names)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "DELETE FROM %s WHERE file %s;\n", table(t), in)
	}
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("load %s: %w", describeFiles(names), err)
	}
	return nil
}

// deleteTails deletes the rows of the grown files resume names past the
// lines the store keeps of each.
func deleteTails(ctx context.Context, tx *sql.Tx, resume map[string]fileMark) error {
	if len(resume) == 0 {
		return nil
	}
	var conds []string
	for name, m := range resume {
		conds = append(conds, fmt.Sprintf("(file = %s AND line > %d)", quoteString(name), m.lines))
	}
	where := strings.Join(conds, " OR ")
	for _, t := range trajectory.EventTypes() {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+typeTable(t)+" WHERE "+where); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	return nil
}

// describeFiles names files in an error message, a few of them at most.
func describeFiles(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more files", strings.Join(files[:3], ", "), len(files)-3)
}

// plural returns "1 session" or "2 sessions".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
