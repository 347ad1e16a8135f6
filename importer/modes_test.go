package importer

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// The failure-mode fixtures (testdata/gen/README.md): real Claude Code
// 2.1.328 and Codex 0.171.0 sessions with a loop, repeated reads, an
// unknown tool, an empty input, a failing command, a big output, a denied
// write, a reply cut at max_tokens and a request that failed for good.
const (
	ccModes  = "testdata/claudecode-modes"
	cxModes  = "testdata/codex-modes"
	cxFailed = "testdata/codex-failed"
)

// outcomes returns each call's outcome in a trajectory: "success" or the
// failure kind, with ":code" when there is one.
func outcomes(evs []trajectory.Event) map[string]string {
	out := map[string]string{}
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
	return out
}

func TestImportedFailureModesGetTheClientsOutcomes(t *testing.T) {
	want := map[string]string{
		"read_1": "success", "read_5": "success", "wc_3": "success",
		"frob_1": "not_found", "empty_1": "invalid_input", "cat_1": "tool_error:exit:1",
		"big_1": "success", "write_1": "permission_denied", "write_3": "permission_denied",
	}
	for _, tc := range []struct {
		format     Format
		path, pref string
	}{{ClaudeCode, ccModes, "toolu_"}, {Codex, cxModes, "call_"}} {
		t.Run(string(tc.format), func(t *testing.T) {
			rep := importAll(t, tc.format, t.TempDir(), tc.path)
			if len(rep.Sessions) != 1 || rep.Sessions[0].ToolCalls != 15 {
				t.Fatalf("sessions %+v, want one with the 15 calls of the script", rep.Sessions)
			}
			path := rep.Sessions[0].Path
			if fr, err := trajectory.ValidateFile(path); err != nil || len(fr.Problems) > 0 {
				t.Fatalf("does not validate: %v %v", err, fr.Problems)
			}
			evs := readEvents(t, path)
			got := outcomes(evs)
			for id, w := range want {
				if got[tc.pref+id] != w {
					t.Errorf("%s%s: %q, want %q", tc.pref, id, got[tc.pref+id], w)
				}
			}
			start := evs[0].Payload.(*trajectory.SessionStart)
			if start.OriginFile != rep.Sessions[0].Source {
				t.Errorf("origin_file %q, want the transcript %q", start.OriginFile, rep.Sessions[0].Source)
			}
			if start.ToolsUnknown != (tc.format == Codex) {
				t.Errorf("tools_unknown %v for %s", start.ToolsUnknown, tc.format)
			}
			checkOrigins(t, evs, start.OriginFile, tc.pref)
			big := eventsOf(evs, trajectory.TypeToolEnd, tc.pref+"big_1")[0].Payload.(*trajectory.ToolEnd)
			if !big.Truncated {
				t.Errorf("the big output's tool_end %+v is not truncated", big)
			}
			cut := false
			for _, ev := range eventsOf(evs, trajectory.TypeModelResponse, "") {
				cut = cut || ev.Payload.(*trajectory.ModelResponse).StopReason == trajectory.StopMaxTokens
			}
			if !cut {
				t.Error("no response stopped at max_tokens")
			}
		})
	}
}

// checkOrigins checks that every event about a call names the line of the
// transcript that holds the call's id, and every model event a line.
func checkOrigins(t *testing.T, evs []trajectory.Event, file, pref string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for _, ev := range evs {
		line := 0
		switch p := ev.Payload.(type) {
		case *trajectory.ModelRequest:
			line = p.OriginLine
		case *trajectory.ModelResponse:
			line = p.OriginLine
		case *trajectory.ModelError:
			line = p.OriginLine
		default:
			r := trajectory.ToolRefOf(p)
			if r == nil {
				continue
			}
			if r.OriginLine < 1 || r.OriginLine > len(lines) || !strings.Contains(lines[r.OriginLine-1], `"`+r.ToolUseID+`"`) {
				t.Errorf("%s of %s: origin_line %d does not hold the call", ev.Type(), r.ToolUseID, r.OriginLine)
			}
			continue
		}
		if line < 1 || line > len(lines) {
			t.Errorf("%s seq %d: origin_line %d is no line of the transcript", ev.Type(), ev.Seq, line)
		}
	}
}

// Claude Code writes "error":"server_error", a string, on the record of
// a request that failed for good, and saves a big output to a file with
// its size: the line is a model_error, not a malformed line, and the
// output's real size is kept.
func TestClaudeCodesFailedRequestAndSavedOutput(t *testing.T) {
	rep := importAll(t, ClaudeCode, t.TempDir(), ccModes)
	for _, p := range rep.Problems {
		t.Errorf("problem: %v", p)
	}
	evs := readEvents(t, rep.Sessions[0].Path)
	errs := eventsOf(evs, trajectory.TypeModelError, "")
	if len(errs) != 1 {
		t.Fatalf("%d model_errors, want the one failed request", len(errs))
	}
	if e := errs[0].Payload.(*trajectory.ModelError); e.ErrorKind != trajectory.ModelServerError || e.StatusCode != 500 || e.WillRetry {
		t.Errorf("model_error %+v, want server_error 500, not retried", e)
	}
	end := evs[len(evs)-1].Payload.(*trajectory.SessionEnd)
	if end.Reason != trajectory.EndError {
		t.Errorf("session_end reason %s, want error: the last request failed", end.Reason)
	}
	big := eventsOf(evs, trajectory.TypeToolEnd, "toolu_big_1")[0].Payload.(*trajectory.ToolEnd)
	if !big.Truncated || big.OutputBytes != 348894 {
		t.Errorf("tool_end %+v, want truncated with the saved output's 348894 bytes", big)
	}
}

// A Codex task that ended with a server error is a request with a
// model_error and no response; the header's wall time is the call's
// duration.
func TestCodexFailedRequestAndWallTime(t *testing.T) {
	rep := importAll(t, Codex, t.TempDir(), cxFailed)
	evs := readEvents(t, rep.Sessions[0].Path)
	if fr, err := trajectory.ValidateFile(rep.Sessions[0].Path); err != nil || len(fr.Problems) > 0 {
		t.Fatalf("does not validate: %v %v", err, fr.Problems)
	}
	errs := eventsOf(evs, trajectory.TypeModelError, "")
	if len(errs) != 1 || errs[0].Payload.(*trajectory.ModelError).ErrorKind != trajectory.ModelServerError {
		t.Fatalf("model_errors %v, want one server_error", errs)
	}
	end := eventsOf(evs, trajectory.TypeToolEnd, "call_read_1")[0].Payload.(*trajectory.ToolEnd)
	// sleep 0.3: the header says 0.2824 seconds (Codex's exec event says
	// a few microseconds).
	if end.DurationUnknown || end.DurationMs < 250 || end.DurationMs > 1000 {
		t.Errorf("tool_end %+v, want the header's wall time of about 280 ms", end)
	}
}
