package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/importer"
	"github.com/retrace-dev/retrace/trajectory"
)

// callFacts are what a round trip must keep of each tool call.
type callFacts struct {
	tool       string
	failure    trajectory.FailureKind
	durationMs float64
	unknown    bool
}

func callsOf(t *testing.T, path string) map[string]callFacts {
	t.Helper()
	evs, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]callFacts{}
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			out[p.ToolUseID] = callFacts{tool: p.Tool}
		case *trajectory.ToolFailure:
			c := out[p.ToolUseID]
			c.failure = p.FailureKind
			out[p.ToolUseID] = c
		case *trajectory.ToolEnd:
			c := out[p.ToolUseID]
			c.durationMs, c.unknown = p.DurationMs, p.DurationUnknown
			out[p.ToolUseID] = c
		}
	}
	return out
}

func mustValidate(t *testing.T, path string) {
	t.Helper()
	rep, err := trajectory.ValidateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("%s does not validate: %v", path, rep.Problems)
	}
}

func TestExportToOTLPJSONAndImportGivesTheSameToolCallsAndDurations(t *testing.T) {
	files := synthCorpus(t, 40)
	var buf bytes.Buffer
	fw := &FileWriter{W: &buf}
	rep, err := Export(context.Background(), Options{Files: files, Send: fw.Send, BatchSpans: 500})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("export: %v %v", err, rep.Problems)
	}
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(traces, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	irep, err := Import(context.Background(), ImportOptions{Paths: []string{traces}, RunsDir: runs})
	if err != nil || len(irep.Problems) > 0 {
		t.Fatalf("import: %v %v", err, irep.Problems)
	}
	if len(irep.Sessions) != len(files) || len(irep.Unknown) != 0 {
		t.Fatalf("imported %d sessions (unknown %v) from %d", len(irep.Sessions), irep.Unknown, len(files))
	}
	// Sessions come back in export order, which is the files' order.
	totalCalls := 0
	for i, s := range irep.Sessions {
		mustValidate(t, s.Path)
		want, got := callsOf(t, files[i]), callsOf(t, s.Path)
		if len(want) != len(got) {
			t.Fatalf("%s: %d calls, the original %d", s.Path, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("%s: call %s is %+v, the original %+v", s.Path, id, got[id], w)
			}
		}
		totalCalls += len(want)
	}
	if totalCalls == 0 {
		t.Fatal("the corpus has no tool calls to compare")
	}

	again, err := Import(context.Background(), ImportOptions{Paths: []string{traces}, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range again.Sessions {
		if s.Outcome != importer.Unchanged {
			t.Fatalf("second import of %s: %s, want unchanged", s.ID, s.Outcome)
		}
	}
}

// otherAgent is a trace as another agent's GenAI instrumentation writes it:
// one pretty-printed document, enum names, no retrace.* attributes, an HTTP
// span and an embeddings span the importer does not know.
const otherAgent = `{
  "resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "travel-agent"}}]},
    "scopeSpans": [{
      "scope": {"name": "openai-agents"},
      "spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "invoke_agent planner",
         "kind": "SPAN_KIND_INTERNAL", "startTimeUnixNano": "1764583200000000000", "endTimeUnixNano": "1764583205000000000",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                        {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175", "parentSpanId": "eee19b7ec3c1b174",
         "name": "chat gpt-5", "kind": 3, "startTimeUnixNano": "1764583200100000000", "endTimeUnixNano": 1764583201000000000,
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-5"}},
                        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1200"}},
                        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 80}},
                        {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "tool_calls"}]}}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b176", "parentSpanId": "eee19b7ec3c1b174",
         "name": "execute_tool search_flights", "startTimeUnixNano": "1764583201000000000", "endTimeUnixNano": "1764583201250500000",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                        {"key": "gen_ai.tool.name", "value": {"stringValue": "search_flights"}},
                        {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_1"}},
                        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{\"to\":\"LIS\"}"}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b177", "parentSpanId": "eee19b7ec3c1b176",
         "name": "GET /flights", "kind": 3, "startTimeUnixNano": "1764583201010000000", "endTimeUnixNano": "1764583201240000000"},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b178", "parentSpanId": "eee19b7ec3c1b174",
         "name": "execute_tool book", "startTimeUnixNano": "1764583201300000000", "endTimeUnixNano": "1764583201400000000",
         "status": {"code": "STATUS_CODE_ERROR", "message": "sold out"},
         "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "book"}},
                        {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_2"}},
                        {"key": "error.type", "value": {"stringValue": "SoldOut"}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b179", "parentSpanId": "eee19b7ec3c1b174",
         "name": "embeddings text-embedding-3", "startTimeUnixNano": "1764583201500000000", "endTimeUnixNano": "1764583201600000000",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "embeddings"}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b17a", "parentSpanId": "eee19b7ec3c1b174",
         "name": "chat gpt-5", "startTimeUnixNano": "1764583202000000000", "endTimeUnixNano": "1764583204000000000",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                        {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}]}
      ]
    }]
  }]
}
`

func TestAnotherAgentsGenAITraceBecomesAValidTrajectoryAndItsOtherSpansAreCounted(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "agent.json")
	os.WriteFile(f, []byte(otherAgent), 0o600)
	rep, err := Import(context.Background(), ImportOptions{Paths: []string{dir}, RunsDir: filepath.Join(dir, "runs")})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("import: %v %v", err, rep.Problems)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].ToolCalls != 2 {
		t.Fatalf("sessions %+v", rep.Sessions)
	}
	if rep.Unknown["span without gen_ai.operation.name"] != 1 || rep.Unknown["gen_ai operation embeddings"] != 1 {
		t.Fatalf("unknown %v: want the HTTP span and the embeddings span counted", rep.Unknown)
	}
	path := rep.Sessions[0].Path
	mustValidate(t, path)
	calls := callsOf(t, path)
	if c := calls["call_1"]; c.tool != "search_flights" || c.durationMs != 250.5 || c.unknown || c.failure != "" {
		t.Fatalf("call_1 = %+v, want search_flights ok in 250.5 ms", c)
	}
	if c := calls["call_2"]; c.failure != trajectory.FailureToolError || c.durationMs != 100 {
		t.Fatalf("call_2 = %+v, want a tool_error in 100 ms", c)
	}
	evs, _ := trajectory.ReadFile(path)
	st := evs[0].Payload.(*trajectory.SessionStart)
	end := evs[len(evs)-1].Payload.(*trajectory.SessionEnd)
	if st.Provider != "openai" || st.Model != "gpt-5" || end.Reason != trajectory.EndTurn || end.Usage.InputTokens != 1200 || end.DurationMs != 5000 {
		t.Fatalf("start %+v / end %+v", st, end)
	}
	for _, ev := range evs {
		if f, ok := ev.Payload.(*trajectory.ToolFailure); ok && f.ErrorCode != trajectory.ErrorCodeOther {
			t.Fatalf("error_code %q, want other: the span's error.type SoldOut is outside the closed format", f.ErrorCode)
		}
		if c, ok := ev.Payload.(*trajectory.ToolCall); ok && c.ToolUseID == "call_1" && string(c.Input) != `{"to":"LIS"}` {
			t.Fatalf("input %s", c.Input)
		}
	}
}

func TestMalformedOTLPJSONNamesTheFileLineAndPath(t *testing.T) {
	span := func(field string) string {
		s := `{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat m", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}`
		return strings.Replace(s, `"name": "chat m"`, field, 1)
	}
	doc := func(spans ...string) string {
		return "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n" + strings.Join(spans, ",\n") + "\n]}]}]}\n"
	}
	for _, tc := range []struct{ name, input, want string }{
		{"a span id that is not hex names the span and field", doc(span(`"name": "x"`), span(`"name": "y", "spanId": "zz"`)),
			":3: resourceSpans[0].scopeSpans[0].spans[1].spanId"},
		{"a time that is no number names the span", doc(strings.Replace(span(`"name": "x"`), `"endTimeUnixNano": "2"`, `"endTimeUnixNano": "soon"`, 1)),
			":2: resourceSpans[0].scopeSpans[0].spans[0]"},
		{"a list where an object belongs names the field", `{"resourceSpans": [{"resource": [], "scopeSpans": []}]}`,
			":1: resourceSpans[0].resource"},
		{"text that is not JSON says so", "{\"resourceSpans\": [\n oops]}", ":2"},
		{"a JSON array is not a trace document", `[1, 2]`, ":1"},
		{"an empty file is no trace document", ``, ":1"},
		{"a time past what Go and RFC 3339 can hold", doc(strings.Replace(span(`"name": "x"`), `"endTimeUnixNano": "2"`, `"endTimeUnixNano": "18446744073709551615"`, 1)),
			":2: resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano"},
		{"a span that ends before it starts", doc(strings.Replace(span(`"name": "x"`), `"startTimeUnixNano": "1"`, `"startTimeUnixNano": "5"`, 1)),
			":2: resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "bad.json")
			os.WriteFile(f, []byte(tc.input), 0o600)
			rep, err := Import(context.Background(), ImportOptions{Paths: []string{f}, RunsDir: filepath.Join(dir, "runs")})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 1 {
				t.Fatalf("problems %v", rep.Problems)
			}
			var pe *PathError
			if !errors.As(rep.Problems[0], &pe) || !errors.Is(rep.Problems[0], ErrMalformed) {
				t.Fatalf("problem %v is no *PathError wrapping ErrMalformed", rep.Problems[0])
			}
			if msg := rep.Problems[0].Error(); !strings.Contains(msg, f+tc.want) {
				t.Fatalf("problem %q does not name %q", msg, f+tc.want)
			}
		})
	}
}

func FuzzImport(f *testing.F) {
	f.Add([]byte(otherAgent))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"execute_tool x","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`))
	f.Add([]byte(`{"resourceSpans":[]}` + "\n" + `{"resourceSpans":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "t.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Import(context.Background(), ImportOptions{Paths: []string{p}, RunsDir: filepath.Join(dir, "runs")})
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range rep.Problems {
			if !errors.Is(pr, ErrMalformed) {
				t.Fatalf("problem %v does not wrap ErrMalformed", pr)
			}
		}
		for _, s := range rep.Sessions {
			vr, err := trajectory.ValidateFile(s.Path)
			if err != nil {
				t.Fatal(err)
			}
			if len(vr.Problems) > 0 {
				b, _ := os.ReadFile(s.Path)
				t.Fatalf("imported session does not validate: %v\n%s", vr.Problems, b)
			}
		}
		_ = fmt.Sprint(rep.Unknown)
	})
}

func TestImportedTranscriptsRoundTripWithTheirUnknownDurationsAndPermissions(t *testing.T) {
	runs := t.TempDir()
	for _, src := range []struct {
		format importer.Format
		dir    string
	}{{importer.ClaudeCode, "../importer/testdata/claudecode"}, {importer.Codex, "../importer/testdata/codex"}} {
		rep, err := importer.Import(context.Background(), importer.Options{Format: src.format, Paths: []string{src.dir}, RunsDir: runs})
		if err != nil || len(rep.Sessions) == 0 {
			t.Fatalf("import %s: %v (%d sessions)", src.dir, err, len(rep.Sessions))
		}
	}
	files, err := trajectory.Expand(runs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep, err := Export(context.Background(), Options{Files: files, Send: (&FileWriter{W: &buf}).Send})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("export: %v %v", err, rep.Problems)
	}
	if rep.DurationUnknown == 0 {
		t.Fatal("the transcripts gave no call without a measured duration; the test proves nothing")
	}
	traces := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(traces, buf.Bytes(), 0o600)
	back := t.TempDir()
	irep, err := Import(context.Background(), ImportOptions{Paths: []string{traces}, RunsDir: back})
	if err != nil || len(irep.Problems) > 0 || len(irep.Sessions) != len(files) {
		t.Fatalf("import: %v %v, %d sessions of %d", err, irep.Problems, len(irep.Sessions), len(files))
	}
	perms := func(path string) (n int) {
		evs, _ := trajectory.ReadFile(path)
		for _, ev := range evs {
			switch ev.Type() {
			case trajectory.TypePermissionAllow, trajectory.TypePermissionDeny, trajectory.TypePermissionPrompt:
				n++
			}
		}
		return n
	}
	unknown := 0
	for i, s := range irep.Sessions {
		mustValidate(t, s.Path)
		want, got := callsOf(t, files[i]), callsOf(t, s.Path)
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("%s: call %s is %+v, the original %+v", s.Path, id, got[id], w)
			}
			if w.unknown {
				unknown++
			}
		}
		if perms(s.Path) != perms(files[i]) {
			t.Fatalf("%s: %d permission decisions, the original %d", s.Path, perms(s.Path), perms(files[i]))
		}
	}
	if unknown != rep.DurationUnknown {
		t.Fatalf("%d calls came back without a duration, %d were exported so", unknown, rep.DurationUnknown)
	}
}
