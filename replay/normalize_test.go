package replay

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// volatileScript prints the time twice over and lists files: date(1), the
// modification time of a file as date(1) and ls -la print it, and a
// directory's listing. The workspace's files are dated 2020 when the
// session is recorded; the replay restores them now, so their times
// differ for certain, without sleeping.
const volatileScript = `turns:
  - content:
      - tool_use: {id: toolu_date, name: bash, input: {command: "export LC_ALL=C; date; date -r data.txt; ls -la data.txt; ls -la sub"}}
  - content:
      - text: "done"
`

func volatileWorkspace(t *testing.T, extraConfig string) string {
	t.Helper()
	ws := t.TempDir()
	// The replay restores into a directory only its owner may enter (0700);
	// the recorded workspace is made alike, so ls -la's ".." line agrees.
	if err := os.Chmod(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"data.txt": "data\n", "sub/a.txt": "a\n", "sub/b.txt": "bb\n",
		config.FileName: "permissions:\n  mode: bypass\n" + extraConfig}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"data.txt", "sub/a.txt", "sub/b.txt", "sub"} {
		if err := os.Chtimes(filepath.Join(ws, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func toolOutput(t *testing.T, path, id string) string {
	t.Helper()
	events, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if p, ok := ev.Payload.(*trajectory.ToolResult); ok && p.ToolUseID == id {
			return p.Text
		}
	}
	t.Fatalf("no tool_result for %s in %s", id, path)
	return ""
}

// tableWithDetails is the report as the terminal shows it with --details.
func tableWithDetails(r Report) string {
	var b strings.Builder
	r.Table(&b)
	r.Details(&b)
	return b.String()
}

// The acceptance test of issue 13: a recording whose bash calls print date
// and ls -la replays identically with the default normalisation and
// diverges with --no-default-normalize.
func TestDateAndLsOutputReplayIdenticallyOnlyWithTheDefaultNormalisation(t *testing.T) {
	recording := record(t, volatileScript, volatileWorkspace(t, ""), nil, recorder.SnapshotOptions{})
	recorded := toolOutput(t, recording, "toolu_date")
	if !strings.Contains(recorded, "Wed Jan  1 00:00:00 UTC 2020") || !strings.Contains(recorded, "Jan  1  2020 data.txt") {
		t.Fatalf("the recorded output does not show the 2020 times:\n%s", recorded)
	}

	t.Run("with the default normalisation the replay is identical", func(t *testing.T) {
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), TrustRecording: true})
		if err != nil {
			t.Fatal(err)
		}
		if replayed := toolOutput(t, res.Path, "toolu_date"); replayed == recorded {
			t.Fatalf("the replay printed the same times, so the test proves nothing:\n%s", replayed)
		}
		if !res.Report.Identical() {
			t.Fatalf("the replay diverges:\n%s", tableWithDetails(res.Report))
		}
		var used []string
		for _, u := range res.Report.Normalized {
			used = append(used, u.Rule)
		}
		for _, want := range []string{"date", "ls_time"} {
			if !slices.Contains(used, want) {
				t.Errorf("the report does not say rule %s applied: %+v", want, res.Report.Normalized)
			}
		}
	})

	t.Run("with --no-default-normalize the replay diverges on the bash call", func(t *testing.T) {
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), TrustRecording: true,
			Compare: compare.Options{NoDefaults: true}})
		if err != nil {
			t.Fatal(err)
		}
		d, ok := res.Report.First()
		if !ok {
			t.Fatal("the replay is identical without the default normalisation")
		}
		if d.Class != compare.ClassToolOutput || d.ToolUseID != "toolu_date" || d.Tool != "bash" {
			t.Fatalf("the first divergence is %+v, want the bash call's output:\n%s", d, tableWithDetails(res.Report))
		}
		// The files' times are restored with them; the directory's is
		// the restore's, so ls -la sub's "." line shows the 2020 one.
		if !regexp.MustCompile(`(?m)^-.*Jan  1  2020 \.$`).MatchString(d.Diff) {
			t.Errorf("the diff does not show the recorded time of the directory:\n%s", d.Diff)
		}
		if len(res.Report.Normalized) != 0 {
			t.Errorf("rules applied with the defaults off: %+v", res.Report.Normalized)
		}
	})
}

// A recording's own replay section applies, even untrusted, and the report
// names the rule's file and line; a command-line level can replace its
// level.
func TestARecordingsReplaySectionNormalisesItsReplay(t *testing.T) {
	section := "replay:\n  normalize:\n    - pattern: '(Mon|Tue|Wed|Thu|Fri|Sat|Sun) .* 20[0-9][0-9]'\n      replace: '<when>'\n      tools: [bash]\n" +
		"    - pattern: '(Jan|Dec) +[0-9]+ +[0-9:]+'\n      replace: '<ls>'\n"
	recording := record(t, volatileScript, volatileWorkspace(t, section), nil, recorder.SnapshotOptions{})
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), TrustRecording: true,
		Compare: compare.Options{NoDefaults: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		t.Fatalf("the recording's own rules did not cover its volatile output:\n%s", tableWithDetails(res.Report))
	}
	if len(res.Report.Normalized) != 2 || !strings.HasSuffix(res.Report.Normalized[0].Rule, "/retrace.yaml:5") || !strings.HasSuffix(res.Report.Normalized[1].Rule, "/retrace.yaml:8") {
		t.Fatalf("the report names %+v, want the two rules by file and line", res.Report.Normalized)
	}
	if !hasNote(res.Report, "sets 2 normalisation rules") {
		t.Errorf("no note says the recording's rules applied: %q", res.Report.Notes)
	}

}

// --tool-level bash=exit_code or ignore makes a bash call whose output
// always differs compare equal; exact, the default, does not.
func TestAToolLevelFromTheCallerDecidesHowABashCallIsCompared(t *testing.T) {
	recording := record(t, volatileScript, volatileWorkspace(t, ""), nil, recorder.SnapshotOptions{})
	for _, tc := range []struct {
		level     compare.Level
		identical bool
	}{{compare.LevelExact, false}, {compare.LevelExitCode, true}, {compare.LevelIgnore, true}} {
		t.Run("at level "+string(tc.level)+" without the default rules", func(t *testing.T) {
			res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), TrustRecording: true,
				Compare: compare.Options{NoDefaults: true, Tools: map[string]compare.Level{"bash": tc.level}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Identical() != tc.identical {
				t.Fatalf("identical %v, want %v:\n%s", res.Report.Identical(), tc.identical, tableWithDetails(res.Report))
			}
		})
	}
}

// config's closed lists of scopes and levels are compare's.
func TestTheConfigurationsScopesAndLevelsAreCompares(t *testing.T) {
	var scopes, levels []string
	for _, s := range compare.Scopes {
		scopes = append(scopes, string(s))
	}
	for _, l := range compare.Levels {
		levels = append(levels, string(l))
	}
	if !slices.Equal(scopes, config.ReplayScopes) || !slices.Equal(levels, config.ReplayLevels) {
		t.Fatalf("config has %v and %v, compare %v and %v", config.ReplayScopes, config.ReplayLevels, scopes, levels)
	}
}
