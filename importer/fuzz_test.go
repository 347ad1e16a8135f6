package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// fuzzImport parses data as a transcript of format and checks the
// property every import must keep: it never panics, and whatever it
// accepts becomes a trajectory that passes the contract's validation.
func fuzzImport(t *testing.T, format Format, data []byte) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	parse := map[Format]func(*fileReader) ([]*session, error){ClaudeCode: parseClaudeCode, Codex: parseCodex, OpenCode: parseOpenCode}[format]
	fr := &fileReader{path: path, unknown: map[string]int{}}
	sessions, err := fr.run(parse)
	if err != nil {
		return
	}
	for _, s := range sessions {
		var buf bytes.Buffer
		var now time.Time
		rec := recorder.New(&buf, recorder.Options{SessionID: s.sessionID(), Clock: func() time.Time { return now }})
		s.emit(rec, func(ts time.Time) {
			if ts.After(now) {
				now = ts
			}
		})
		if _, err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := trajectory.ValidateStream(&buf, "imported")
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("an accepted transcript gave an invalid trajectory: %v\ninput:\n%s", rep.Problems, data)
		}
	}
}

func addSeeds(f *testing.F, fixture string, extra ...string) {
	if b, err := os.ReadFile(fixture); err == nil {
		f.Add(b)
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

func FuzzClaudeCode(f *testing.F) {
	addSeeds(f, "/dev/null",
		`{"type":"user","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"x","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":1}}}
{"type":"user","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"permissionDecision":{"decision":"reject","source":"config"}}
{"type":"assistant","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn"}}
`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"A","input":{}},{"type":"tool_use","id":"t","name":"A","input":{}}]}}`,
	)
	if b, err := os.ReadFile(ccFixture); err == nil {
		f.Add(b)
	}
	addSeeds(f, "testdata/claudecode-modes/-home-user-project/3c52ccf9-4179-479b-ae9a-6bec39dfbf13.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, ClaudeCode, data) })
}

func FuzzCodex(f *testing.F) {
	addSeeds(f, cxFixture,
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cli_version":"1"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 2\n"}}
{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`,
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":{"output":"x"}}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, Codex, data) })
}

func FuzzOpenCode(f *testing.F) {
	addSeeds(f, "testdata/opencode-modes/run.jsonl",
		`{"info":{"id":"s","version":"1"},"messages":[{"info":{"id":"m1","role":"assistant","time":{"created":1,"completed":2},"finish":"tool-calls"},"parts":[{"type":"tool","tool":"invalid","callID":"c1","messageID":"m1","state":{"status":"completed","input":{"tool":"x"},"output":"Model tried to call unavailable tool 'x'","time":{"start":1,"end":2}}}]}]}`,
		`{"type":"tool_use","timestamp":5,"sessionID":"s","part":{"type":"tool","tool":"bash","callID":"c","messageID":"m","state":{"status":"completed","input":{},"metadata":{"exit":1}}}}`,
	)
	addSeeds(f, "testdata/opencode-modes/export.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, OpenCode, data) })
}
