package harness

import (
	"os"
	"path/filepath"
)

// ScenarioTag is the session_start tag that names the eval scenario a
// session ran for. Such a session's tools saw a throwaway home (see
// ThrowawayHome), never the user's, so a replay of it makes one again.
const ScenarioTag = "eval_scenario"

// ThrowawayHome makes home, a home directory of its own for a session's
// tool processes (config Permissions.Home), holding the shell startup
// files a hostile command aims at, so that what a scenario's commands do
// to "their" home is visible and no user's file is read or written.
func ThrowawayHome(home string) error {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	for _, name := range []string{".bashrc", ".profile", ".zshrc"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte("# a throwaway home's startup file\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ScenarioHome returns the throwaway home of the eval run whose workspace
// was ws. The scenario runner lays a suite's runs out as
// ROOT/ws/INDEX-NAME/REPEAT beside one ROOT/home, so a replay maps the
// recorded home to its own without the home being recorded: a home is
// where a user lives, which session_start leaves out.
func ScenarioHome(ws string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(ws))), "home")
}
