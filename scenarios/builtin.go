package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
)

// suiteFS holds the built-in suite: the failure museum, each scenario
// named for what it proves. defense_X_fires and defense_X_quiet show a
// defense acting and staying quiet where its condition nearly holds,
// detector_X_fires and detector_X_quiet the same of a detector (as an
// exhibit of a recording when the runtime cannot produce the fault),
// permission_*, tool_error_*, shaping_*, parallel_* and deferred_* the
// permission chain, the executor's stages and the result shaping. A test
// (coverage_test.go) fails when a defense or detector has no scenario of
// either kind.
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

// BuiltinScenario returns the built-in scenario of file NAME.txtar (the
// demo that retrace run plays with no argument, say), parsed alone.
func BuiltinScenario(name string) (*Scenario, error) {
	file := name + ".txtar"
	data, err := suiteFS.ReadFile(path.Join("suite", file))
	if err != nil {
		return nil, fmt.Errorf("%w: no built-in scenario %q", ErrInvalid, name)
	}
	return Parse(data, path.Join(BuiltinDir, file))
}

// WriteWorkspace writes the scenario's workspace files into dir, making
// it and the directories the files need.
func (s *Scenario) WriteWorkspace(dir string) error { return writeWorkspace(dir, s.Files) }
