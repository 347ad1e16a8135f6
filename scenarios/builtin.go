package scenarios

import (
	"embed"
	"io/fs"
	"path"
)

// suiteFS holds the built-in suite: the failure museum, each scenario
// proving that a defense, a permission step or a detector acts (or, in a
// clean scenario, does not).
//
//go:embed suite/*.txtar
var suiteFS embed.FS

// BuiltinDir names the built-in suite's files in messages and results.
const BuiltinDir = "builtin"

// Builtin returns the built-in suite, parsed. Its files are named
// builtin/NAME.txtar.
func Builtin() ([]*Scenario, error) {
	entries, err := fs.Glob(suiteFS, "suite/*.txtar")
	if err != nil {
		return nil, err
	}
	var sources []source
	for _, e := range entries {
		data, err := suiteFS.ReadFile(e)
		if err != nil {
			return nil, err
		}
		sources = append(sources, source{name: path.Join(BuiltinDir, path.Base(e)), data: data})
	}
	return parseAll(sources)
}
