package diff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/retrace-dev/retrace/results"
)

// ResultsFile is the name of the eval results an eval --out directory holds.
const ResultsFile = "results.json"

// ErrSide is wrapped by the errors of ResolveSide.
var ErrSide = errors.New("bad diff side")

// ResolveSide turns one side's paths into the runs to load and the eval
// results to pair, if any: an eval --out directory (one holding
// results.json) gives its runs/ and its results.json; a results.json
// file gives itself and the runs/ beside it; anything else (a file, a
// directory of runs, a glob) is runs. At most one results.json per side.
func ResolveSide(paths []string) (runs []string, results string, err error) {
	for _, p := range paths {
		res := ""
		switch st, err := os.Stat(p); {
		case err == nil && st.IsDir():
			if rs, err := os.Stat(filepath.Join(p, ResultsFile)); err == nil {
				res = filepath.Join(p, ResultsFile)
				if !rs.Mode().IsRegular() {
					// A named pipe would block the read until a writer
					// came, past Ctrl-C.
					return nil, "", fmt.Errorf("%w: %s is not a regular file; an eval --out directory holds results.json as one", ErrSide, res)
				}
			}
		case err == nil && filepath.Base(p) == ResultsFile:
			res = p
		}
		if res == "" {
			runs = append(runs, p)
			continue
		}
		if results != "" {
			return nil, "", fmt.Errorf("%w: %s and %s are both eval results; give one per side", ErrSide, results, res)
		}
		results = res
		dir := filepath.Join(filepath.Dir(res), "runs")
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			runs = append(runs, dir)
		} else if !errors.Is(err, fs.ErrNotExist) && err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrSide, err)
		}
	}
	return runs, results, nil
}

// ReadResults reads an eval results.json.
func ReadResults(path string) (*results.Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSide, err)
	}
	return results.Read(data, path)
}
