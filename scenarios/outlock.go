package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/filelock"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// LockFile is the file in an eval's --out directory that says which eval
// writes it.
const LockFile = ".retrace-eval.lock"

// ErrOutLocked is wrapped by the error of LockOut when another eval
// holds the directory (OutLockedError).
var ErrOutLocked = errors.New("the --out directory is being written by another eval")

// OutLockedError names the eval that holds an --out directory.
type OutLockedError struct {
	// Dir is the directory; Holder is what its holder wrote in the lock
	// file: "pid 1234 started 2026-12-05T23:10:00Z" ("" when it had not
	// written it yet).
	Dir, Holder string
}

func (e *OutLockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "an eval that is starting"
	}
	return fmt.Sprintf("%s: %v (%s); wait for it to finish, or give another --out", e.Dir, ErrOutLocked, holder)
}

func (e *OutLockedError) Unwrap() error { return ErrOutLocked }

// LockOut takes the --out directory dir for one eval until release is
// called (or the process ends, whichever is first: the lock is the
// operating system's, so a killed eval leaves none behind). Two evals
// writing one directory at once would leave results.json and runs/
// telling different stories, so the second is refused with an
// *OutLockedError naming the first: its pid and when it started.
func LockOut(dir string, started time.Time) (release func() error, err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eval: lock %s: %w", dir, err)
	}
	ok, err := filelock.Try(f, true)
	if errors.Is(err, filelock.ErrUnsupported) {
		// Without flock(2) two evals may write one directory.
		ok, err = true, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eval: lock %s: %w", dir, err)
	}
	if !ok {
		f.Close()
		return nil, &OutLockedError{Dir: dir, Holder: readHolder(path)}
	}
	holder := fmt.Sprintf("pid %d started %s\n", os.Getpid(), started.UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(holder), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eval: lock %s: %w", dir, err)
	}
	// The holder's line goes with its lock, so that a refusal never
	// names an eval that ended.
	return func() error {
		f.Truncate(0)
		return f.Close()
	}, nil
}

// ErrOutHoldsRuns is wrapped by the error of PrepareOut
// (OutHoldsRunsError).
var ErrOutHoldsRuns = errors.New("the --out directory already holds recordings")

// OutHoldsRunsError names an --out directory whose runs/ holds recordings
// that are not an earlier eval's into it: Foreign of its Runs recordings
// are not named by its results.json.
type OutHoldsRunsError struct {
	Dir     string
	Runs    int
	Foreign int
}

func (e *OutHoldsRunsError) Error() string {
	return fmt.Sprintf("--out %s: its runs/ holds %d recordings, %d of them not named by %s (not an earlier eval's into it); give an empty directory, or move them out of %s first",
		e.Dir, e.Runs, e.Foreign, filepath.Join(e.Dir, ResultsFile), filepath.Join(e.Dir, "runs"))
}

func (e *OutHoldsRunsError) Unwrap() error { return ErrOutHoldsRuns }

// ResultsFile is the file an eval writes its results to in its --out
// directory.
const ResultsFile = "results.json"

// PrepareOut readies dir, whose lock (LockOut) the caller holds, for an
// eval's output. Its runs/ must never mix two evals' recordings: this
// eval's results.json would name its own runs while detect, report and
// diff read every recording in runs/. An earlier eval's output into the
// same directory (its results.json, and recordings that file names
// every one of) is removed, so that the same command can run again; a
// runs/ holding any recording its results.json does not name (or with no
// results.json: the user's own recordings, another tool's) is refused,
// and nothing is deleted, as they may be the only copy of something. The
// recordings go before results.json, so that an eval killed in between
// leaves a directory the next one still recognizes as an eval's.
func PrepareOut(dir string) error {
	found, err := filepath.Glob(filepath.Join(dir, "runs", "*"+trajectory.Ext))
	if err != nil || len(found) == 0 {
		return nil
	}
	named := earlierRuns(filepath.Join(dir, ResultsFile))
	foreign := 0
	for _, f := range found {
		if !named[filepath.Base(f)] {
			foreign++
		}
	}
	if foreign > 0 {
		return &OutHoldsRunsError{Dir: dir, Runs: len(found), Foreign: foreign}
	}
	for _, f := range found {
		if err := os.RemoveAll(recorder.BlobsDir(f)); err != nil {
			return fmt.Errorf("--out %s: remove the earlier eval's runs: %w", dir, err)
		}
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("--out %s: remove the earlier eval's runs: %w", dir, err)
		}
	}
	if err := os.Remove(filepath.Join(dir, ResultsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out %s: remove the earlier eval's results: %w", dir, err)
	}
	return nil
}

// earlierRuns returns the file names of the recordings the results.json
// at path names, or none when it is not an eval's results file.
func earlierRuns(path string) map[string]bool {
	names := map[string]bool{}
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return names
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return names
	}
	res, err := results.Read(data, path)
	if err != nil {
		return names
	}
	for _, sc := range res.Scenarios {
		for _, r := range sc.Runs {
			if r.Trajectory != "" {
				names[filepath.Base(r.Trajectory)] = true
			}
		}
	}
	return names
}

// holderWait is how long a refused eval waits for the eval that holds
// the lock to write its line: it writes it right after it takes the
// lock, but on a busy machine the refused one can read the file in
// between.
const holderWait = time.Second

// readHolder returns the line the eval holding the lock file at path
// wrote ("" when it wrote none within holderWait).
func readHolder(path string) string {
	deadline := time.Now().Add(holderWait)
	for {
		held, _ := os.ReadFile(path)
		if s := strings.TrimSpace(string(held)); s != "" || time.Now().After(deadline) {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}
