package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	// prior are the sessions a kept database already holds from files the
	// load does not read again: they come first.
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
	// Unchanged are the trajectory files a kept database (Options.Path)
	// already held as they are now (same path, size and modification
	// time), and so were not read again; Files leaves them out.
	Unchanged []string
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
	dupes := 0
	for _, p := range e.Problems {
		if errors.Is(p, ErrDuplicateSession) {
			dupes++
		}
	}
	if dupes == len(e.Problems) {
		fmt.Fprintf(&b, "load refused: %s in two files (--strict-dupes)", plural(dupes, "session"))
	} else {
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
// trajectory line and hands the rows that pass to DuckDB as it goes (Phase
// "check"; Done and Total count bytes of the input files), then waits for
// DuckDB to store the last of them (Phase "load", reported at its start and
// its end, in the same bytes).
type Progress struct {
	Phase       string
	Done, Total int64
}

// Load reads the runs paths name: trajectory files (files, directories and
// globs, as trajectory.Expand resolves them) and Parquet files written by
// ExportParquet (*.parquet files, globs ending in .parquet, and the Parquet
// files below a directory). A trajectory file loaded before into the same
// database is replaced, so loading twice does not double count.
//
// A kept database (Options.Path) answers for exactly the runs each load
// is given: it remembers every trajectory file it read by path, size and
// modification time (the loaded_files table), reads again a file that
// changed (its old rows deleted first), does not read a file that did not,
// and drops the rows of every file the load is not given (Parquet inputs
// are read again every time). A session that an unchanged file holds
// counts as coming first in the duplicate check.
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
	src, err := sources(paths)
	if err != nil {
		return rep, err
	}
	all := src.jsonl.Files
	plan, err := db.planKept(ctx, all)
	if err != nil {
		return rep, err
	}
	files := plan.read
	rep.Unchanged = names(plan.unchanged)
	rep.Parquet, rep.NotRegular = src.parquet, append(src.jsonl.Skipped, src.skipped...)
	problems := src.jsonl.Problems
	dups := &dupState{}
	if dups.prior, err = db.priorSessions(ctx, plan.unchanged); err != nil {
		return rep, err
	}
	// The rows go into DuckDB as the lines are checked, inside one
	// transaction on one connection (the appenders need the connection
	// itself): a refused load rolls it back, and nothing is loaded.
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	defer tx.Rollback()
	if err := db.forget(ctx, tx, names(all)); err != nil {
		return rep, err
	}
	// Replace what an earlier load of the same files left; a new
	// database has nothing to delete.
	var loaded bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM raw_events)").Scan(&loaded); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	if loaded {
		if err := deleteFiles(ctx, tx, names(files)); err != nil {
			return rep, err
		}
	}
	reports, bad, err := db.checkAll(ctx, tx, conn, files, obs, dups)
	if err != nil {
		return rep, err
	}
	rep.Duplicates = dups.list
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
	left := map[string]bool{}
	for _, fr := range reports {
		if fr.Err != nil {
			left[fr.File] = true
		}
	}
	if err := db.remember(ctx, tx, plan, left); err != nil {
		return rep, err
	}
	rep.Files = reports
	for _, fr := range reports {
		rep.Events += fr.Events
	}
	n, err := insertParquet(ctx, tx, src.parquet)
	if err != nil {
		return rep, err
	}
	rep.Events += n
	if err := tx.Commit(); err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	return rep, nil
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

// deleteFiles deletes the rows loaded from the files named.
func deleteFiles(ctx context.Context, tx *sql.Tx, names []string) error {
	if len(names) == 0 {
		return nil
	}
	for _, t := range trajectory.EventTypes() {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+typeTable(t)+" WHERE file IN "+sqlList(names)); err != nil {
			return fmt.Errorf("load %s: %w", describeFiles(names), err)
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
