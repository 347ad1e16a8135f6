package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/trajectory"
)

// modesScript is a session with the failure modes the detectors must see
// in an imported or recorded client session: five identical reads in a
// row (repeated_readonly), three turns of the same count (a loop:
// low_yield_spin), a tool that does not exist (hallucinated_tool), an
// empty input, a failing command, and the same write denied three times
// (denial_loop). READ, COUNT, CAT, WRITE and EMPTY are the client's calls.
const modesScript = `model: MODEL
turns:
  - content:
      - text: "I'll read the notes."
      - tool_use: {id: ID_read_1, name: READ}
  - content: [{tool_use: {id: ID_read_2, name: READ}}]
  - content: [{tool_use: {id: ID_read_3, name: READ}}]
  - content: [{tool_use: {id: ID_read_4, name: READ}}]
  - content: [{tool_use: {id: ID_read_5, name: READ}}]
  - content: [{tool_use: {id: ID_wc_1, name: COUNT}}]
  - content: [{tool_use: {id: ID_wc_2, name: COUNT}}]
  - content: [{tool_use: {id: ID_wc_3, name: COUNT}}]
  - content: [{tool_use: {id: ID_frob_1, name: FROB, input: {target: notes.txt}}}]
  - content: [{tool_use: {id: ID_empty_1, name: EMPTY, input: {}}}]
  - content: [{tool_use: {id: ID_cat_1, name: CAT}}]
  - content: [{tool_use: {id: ID_write_1, name: WRITE}}]
  - content: [{tool_use: {id: ID_write_2, name: WRITE}}]
  - content: [{tool_use: {id: ID_write_3, name: WRITE}}]
  - content: [{text: "Done."}]
`

// modesFor fills modesScript in for a client: its model, tool_use id
// prefix and the tool and input of each call.
func modesFor(model, id string, calls map[string]string) string {
	s := strings.ReplaceAll(modesScript, "MODEL", model)
	s = strings.ReplaceAll(s, "ID_", id)
	for _, k := range []string{"READ", "COUNT", "FROB", "EMPTY", "CAT", "WRITE"} {
		s = strings.ReplaceAll(s, "name: "+k+"}", calls[k]+"}")
		s = strings.ReplaceAll(s, "name: "+k+",", calls[k]+",")
	}
	return s
}

// The acceptance of faithful import and record: for a Claude Code and a
// Codex session with an injected loop, repeated read, unknown tool and
// denied write, run for real (offline, through retrace mock serve
// --record) and imported from the client's own transcript, every call
// has the same outcome in the recording and in the import, and retrace
// detect finds each injected mode in the import with evidence naming the
// client's transcript line that holds the call.
func TestClientSessionsAgreeOnTheWireAndInTheirTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real clients take seconds each")
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -n is not permitted here (%v: %s); the real clients run only in a network namespace of their own, never online", err, strings.TrimSpace(string(out)))
	}
	cases := []struct {
		client        string
		model, prefix string
		calls         map[string]string
		args          string
	}{
		{client: "Claude Code", model: "claude-sonnet-4-5", prefix: "toolu_",
			calls: map[string]string{
				"READ":  "name: Read, input: {file_path: $WS/notes.txt}",
				"COUNT": `name: Bash, input: {command: "wc -l < notes.txt", description: Count lines}`,
				"FROB":  "name: Frobnicate",
				"EMPTY": "name: Read",
				"CAT":   `name: Bash, input: {command: "cat missing.txt", description: Show a file}`,
				"WRITE": `name: Write, input: {file_path: $WS/out.txt, content: "x\n"}`,
			},
			args: `--permission-mode default --allowedTools "Read" "Bash(wc:*)" "Bash(cat:*)"`},
		{client: "Codex", model: "gpt-5.5", prefix: "call_",
			calls: map[string]string{
				"READ":  `name: exec_command, input: {cmd: "cat notes.txt"}`,
				"COUNT": `name: exec_command, input: {cmd: "wc -l < notes.txt"}`,
				"FROB":  "name: frobnicate",
				"EMPTY": "name: exec_command",
				"CAT":   `name: exec_command, input: {cmd: "cat missing.txt"}`,
				"WRITE": `name: exec_command, input: {cmd: "touch out.txt", sandbox_permissions: require_escalated, justification: "write the output"}`,
			}},
	}
	want := map[string]string{
		"read_1": "success", "read_5": "success", "wc_1": "success", "wc_3": "success",
		"frob_1": "not_found", "empty_1": "invalid_input", "cat_1": "tool_error:exit:1",
		"write_1": "permission_denied", "write_2": "permission_denied", "write_3": "permission_denied",
	}
	for _, tc := range cases {
		t.Run(tc.client, func(t *testing.T) {
			var c realClient
			for _, rc := range realClients {
				if rc.name == tc.client {
					c = rc
				}
			}
			if _, err := exec.LookPath(c.bin); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it with npm): %v", c.bin, err)
			}
			run := runRealClient(t, c, modesFor(tc.model, tc.prefix, tc.calls), "check the notes", tc.args,
				map[string]string{"notes.txt": "hello from notes\nline two\n"})
			imported := filepath.Join(run.dir, "imported")
			if code, stdout, stderr := runCLI(t, nil, "import", c.format, filepath.Join(run.home, c.transcript), "--runs", imported); code != ExitOK {
				t.Fatalf("retrace import %s: exit %d\n%s%s", c.format, code, stdout, stderr)
			}
			for _, dir := range []string{run.rec, imported} {
				if code, stdout, stderr := runCLI(t, nil, "validate", dir); code != ExitOK {
					t.Fatalf("%s does not validate (exit %d):\n%s%s", dir, code, stdout, stderr)
				}
			}
			wire, own := callOutcomes(t, run.rec), callOutcomes(t, imported)
			if fmt.Sprint(wire) != fmt.Sprint(own) {
				t.Errorf("the outcomes differ:\nrecorded on the wire: %v\nimported:             %v", wire, own)
			}
			for id, w := range want {
				if own[tc.prefix+id] != w {
					t.Errorf("%s%s: %q, want %q", tc.prefix, id, own[tc.prefix+id], w)
				}
			}

			code, stdout, stderr := runCLI(t, nil, "detect", imported, "--format", "json")
			if code != ExitOK && code != ExitGate {
				t.Fatalf("retrace detect: exit %d\n%s", code, stderr)
			}
			var rep detectors.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("detect --format json: %v\n%s", err, stdout)
			}
			transcript := transcriptOf(t, imported)
			lines := transcriptLines(t, transcript)
			for det, call := range map[string]string{"repeated_readonly": "read_1", "low_yield_spin": "wc_1",
				"hallucinated_tool": "frob_1", "denial_loop": "write_1"} {
				f, ok := findingOf(rep, det)
				if !ok {
					t.Errorf("retrace detect did not find %s in the imported session (findings: %v)", det, rep.Counts())
					continue
				}
				if !citesCall(f, transcript, lines, tc.prefix+call) {
					t.Errorf("%s: evidence %+v, want an origin %s:LINE of the line that holds %s%s", det, f.Evidence, transcript, tc.prefix, call)
				}
			}
			// The text output names the transcript's lines too, the path
			// whole (on a line of its own when it is long).
			if _, text, _ := runCLI(t, nil, "detect", imported, "--limit", "0"); !strings.Contains(text, transcript+":") {
				t.Errorf("retrace detect's table does not name the transcript %s:\n%s", transcript, text)
			}
		})
	}
}

// callOutcomes reads every trajectory in dir and returns each call's
// outcome: "success", or the failure kind with ":code" when it has one.
func callOutcomes(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	out := map[string]string{}
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *trajectory.ToolSuccess:
				out[p.ToolUseID] = "success"
			case *trajectory.ToolFailure:
				out[p.ToolUseID] = string(p.FailureKind)
				if p.ErrorCode != "" {
					out[p.ToolUseID] += ":" + p.ErrorCode
				}
			}
		}
	}
	return out
}

// transcriptOf returns the client file the one session in dir was
// imported from (its session_start's origin_file).
func transcriptOf(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	sort.Strings(files)
	if len(files) != 1 {
		t.Fatalf("%d sessions imported into %s, want 1", len(files), dir)
	}
	evs, err := trajectory.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return evs[0].Payload.(*trajectory.SessionStart).OriginFile
}

func transcriptLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

func findingOf(rep detectors.Report, id string) (detectors.Finding, bool) {
	for _, f := range rep.Findings {
		if f.Detector == id && len(f.Evidence) > 0 {
			return f, true
		}
	}
	return detectors.Finding{}, false
}

// originOf splits an evidence origin "file:line".
func originOf(o string) (string, int, bool) {
	i := strings.LastIndexByte(o, ':')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(o[i+1:])
	return o[:i], n, err == nil
}

// The committed failure-mode fixtures (importer/testdata, made by the real
// clients): imported, retrace detect finds each mode in each client's
// session, with evidence naming the line of the client's own file that
// holds the call; this holds where the clients cannot run.
func TestDetectFindsTheModesOfTheClientFixtures(t *testing.T) {
	cases := []struct {
		format, path, prefix string
		want                 map[string]string
	}{
		{"claude-code", "../../importer/testdata/claudecode-modes", "toolu_", map[string]string{"repeated_readonly": "read_1", "low_yield_spin": "wc_1",
			"hallucinated_tool": "frob_1", "denial_loop": "write_1"}},
		{"codex", "../../importer/testdata/codex-modes", "call_", map[string]string{"repeated_readonly": "read_1", "low_yield_spin": "wc_1",
			"hallucinated_tool": "frob_1", "denial_loop": "write_1"}},
		{"opencode", "../../importer/testdata/opencode-modes/export.json", "toolu_", map[string]string{"repeated_readonly": "read_1", "low_yield_spin": "wc_1",
			"hallucinated_tool": "frob_1"}},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			runs := t.TempDir()
			if code, stdout, stderr := runCLI(t, nil, "import", tc.format, tc.path, "--runs", runs); code != ExitOK {
				t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, stderr := runCLI(t, nil, "detect", runs, "--format", "json")
			if code != ExitOK && code != ExitGate {
				t.Fatalf("detect: exit %d\n%s", code, stderr)
			}
			var rep detectors.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			transcript := transcriptOf(t, runs)
			lines := transcriptLines(t, transcript)
			for det, call := range tc.want {
				f, ok := findingOf(rep, det)
				if !ok {
					t.Errorf("%s not found (findings: %v)", det, rep.Counts())
					continue
				}
				if !citesCall(f, transcript, lines, tc.prefix+call) {
					t.Errorf("%s: evidence %+v, want an origin %s:LINE of the line that holds %s%s", det, f.Evidence, transcript, tc.prefix, call)
				}
			}
		})
	}
}

// citesCall reports whether every evidence of f names a line of the
// client's transcript, and one of them the line that holds call's id (in
// an opencode export a response's line is its message's, not its calls').
func citesCall(f detectors.Finding, transcript string, lines []string, call string) bool {
	found := false
	for _, e := range f.Evidence {
		file, line, ok := originOf(e.Origin)
		if !ok || file != transcript || line < 1 || line > len(lines) {
			return false
		}
		found = found || strings.Contains(lines[line-1], `"`+call+`"`)
	}
	return found
}
