package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/filelock"
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

// ErrOutHoldsRuns is wrapped by the error of CheckOutRuns
// (OutHoldsRunsError).
var ErrOutHoldsRuns = errors.New("the --out directory already holds recordings")

// OutHoldsRunsError names an --out directory whose runs/ already holds
// recordings, and how many.
type OutHoldsRunsError struct {
	Dir  string
	Runs int
}

func (e *OutHoldsRunsError) Error() string {
	return fmt.Sprintf("--out %s: its runs/ already holds %d recordings (an earlier eval's?); give an empty directory, or delete %s first",
		e.Dir, e.Runs, filepath.Join(e.Dir, "runs"))
}

func (e *OutHoldsRunsError) Unwrap() error { return ErrOutHoldsRuns }

// CheckOutRuns refuses an --out directory whose runs/ already holds
// recordings, such as an earlier eval's into the same directory: this
// eval's results.json would name its own runs while detect, report and
// diff read every recording in runs/, both evals' together. Nothing is
// deleted: the recordings may be the only copy of something.
func CheckOutRuns(dir string) error {
	found, err := filepath.Glob(filepath.Join(dir, "runs", "*.jsonl"))
	if err != nil || len(found) == 0 {
		return nil
	}
	return &OutHoldsRunsError{Dir: dir, Runs: len(found)}
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
