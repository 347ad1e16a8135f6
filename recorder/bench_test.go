package recorder

import (
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// benchMix is a realistic turn: a request, a response with two tool uses,
// then each call's events and results; one result carries a secret.
func benchMix() []emission {
	ids := []string{"toolu_01", "toolu_02"}
	refs := []trajectory.ToolRef{{ToolUseID: ids[0], Tool: "read"}, {ToolUseID: ids[1], Tool: "bash"}}
	mix := []emission{
		{1, modelRequest(3)},
		{1, &trajectory.ModelResponse{
			Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockText, Text: "Reading the file, then running the tests."},
				{Type: trajectory.BlockToolUse, ID: ids[0], Name: "read", Input: json.RawMessage(`{"file_path":"internal/server/handler.go"}`)},
				{Type: trajectory.BlockToolUse, ID: ids[1], Name: "bash", Input: json.RawMessage(`{"command":"go test ./internal/server/..."}`)},
			},
			StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use",
			Usage: trajectory.Usage{InputTokens: 1200, OutputTokens: 90, CacheReadTokens: 800}, TTFTMs: 120.5, DurationMs: 900,
		}},
	}
	for i, ref := range refs {
		mix = append(mix,
			emission{1, &trajectory.ToolCall{ToolRef: ref, Input: json.RawMessage(`{"file_path":"internal/server/handler.go"}`), Index: i}},
			emission{1, &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: ref, Source: trajectory.SourceReadOnly, Step: trajectory.StepReadOnly}}},
			emission{1, &trajectory.ToolSuccess{ToolRef: ref}},
			emission{1, &trajectory.ToolEnd{ToolRef: ref, DurationMs: 12.5, OutputBytes: 1400}},
		)
	}
	mix = append(mix,
		emission{1, &trajectory.ToolResult{ToolRef: refs[0], Text: "1\tpackage server\n2\t\n3\t// Handler serves the API; see the Bearer auth middleware.\n4\tfunc Handler() {}\n", Display: trajectory.DisplayFull}},
		emission{1, &trajectory.ToolResult{ToolRef: refs[1], Text: "ok  \texample.com/internal/server\t0.412s\nAuthorization: Bearer " + fakeBearerToken + "\n", Display: trajectory.DisplayFull}},
	)
	return mix
}

func BenchmarkEmit(b *testing.B) {
	mix := benchMix()
	r, err := Create(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, measured := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := mix[i%len(mix)]
		r.Emit(e.turn, e.p)
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu1, _ := cpuTime()
	st, err := r.Close()
	if err != nil || st.Problems() != 0 {
		b.Fatalf("stats %v, err %v", st, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if measured && cpu1 > cpu0 {
		// The rate per CPU second is what one core sustains, whatever else
		// shares the machine; with -cpu 1 the process uses one core.
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "events/cpu-s")
	}
	b.SetBytes(st.Bytes / int64(b.N))
}

func BenchmarkRedact(b *testing.B) {
	var lines [][]byte
	for i, e := range benchMix() {
		line, err := trajectory.AppendEvent(nil, trajectory.NewEvent("20261130-090000.000-0000abcd", int64(i+1), t0, e.turn, e.p))
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, line)
	}
	cases := []struct {
		name  string
		lines [][]byte
	}{
		{"clean", lines[:len(lines)-1]},
		{"secret", lines[len(lines)-1:]},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var total int64
			for _, l := range c.lines {
				total += int64(len(l))
			}
			b.SetBytes(total / int64(len(c.lines)))
			b.ReportAllocs()
			red := DefaultRedactor()
			cpu0, measured := cpuTime()
			for i := 0; i < b.N; i++ {
				red.Redact(c.lines[i%len(c.lines)])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			if cpu1, _ := cpuTime(); measured && cpu1 > cpu0 {
				// What one core spends per line, whatever else shares the machine.
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/line")
			}
		})
	}
}

// cleanSpill returns about size bytes of ordinary tool output without a
// secret: build and test logs, source code, git history with SHAs, UUIDs,
// URLs, base64 and JSON, the things a spilled bash output is made of.
func cleanSpill(size int) []byte {
	chunks := []string{
		"=== RUN   TestHandlerServesTheAPI/a_request_with_a_token_header_is_authorised\n--- PASS: TestHandlerServesTheAPI (0.01s)\n",
		"ok  \tgithub.com/example/project/internal/server\t0.412s\tcoverage: 81.2% of statements\n",
		"commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a\nAuthor: Alice Example <alice@example.com>\nDate:   Mon Nov 30 09:00:00 2026 +0000\n\n    server: check the token before the password reset\n\n",
		"func (s *Server) authorize(r *http.Request) error {\n\ttoken := r.Header.Get(\"Authorization\")\n\tif token == \"\" {\n\t\treturn errMissingToken // the password flow is separate\n\t}\n\treturn s.verify(token)\n}\n",
		"{\"level\":\"info\",\"ts\":\"2026-11-30T09:00:00Z\",\"request_id\":\"0d9e8f7a-6b5c-4d3e-8f1a-3f9a8b7c6d5e\",\"msg\":\"secret rotation scheduled\",\"url\":\"https://api.example.com/v1/keys?page=2\"}\n",
		"drwxr-xr-x  5 alice staff   160 Nov 30 09:00 internal\n-rw-r--r--  1 alice staff  2048 Nov 30 09:00 go.sum\n",
		"data: aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZGF0YSB0aGF0IGlzIG5vdCBhIHNlY3JldCBhdCBhbGw=\n",
		"npm notice New minor version of npm available! See https://docs.npmjs.com/cli/v10 and git@github.com:example/project.git\n",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  vendor/modules.txt\n",
		"    password_hash = bcrypt(password, cost=12)  # token_type: bearer, secret_name: db\n",
	}
	var b []byte
	for i := 0; len(b) < size; i++ {
		b = append(b, chunks[i%len(chunks)]...)
	}
	return b[:size]
}

// BenchmarkRedactSpill redacts a clean 1 MiB spilled output, the common case
// of Blobs.Put; the budget is 10 ms.
func BenchmarkRedactSpill(b *testing.B) {
	spill := cleanSpill(1 << 20)
	red := DefaultRedactor()
	if _, n := red.Redact(spill); n != 0 {
		b.Fatalf("the clean spill has %d redactions", n)
	}
	b.SetBytes(int64(len(spill)))
	b.ResetTimer()
	cpu0, measured := cpuTime()
	for i := 0; i < b.N; i++ {
		red.Redact(spill)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/MiB")
	if cpu1, _ := cpuTime(); measured && cpu1 > cpu0 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e6/float64(b.N), "cpu-ms/MiB")
	}
}

// BenchmarkRedactSpillWithSecrets redacts a 1 MiB output that starts with
// one secret of every kind, so every pattern's regexp runs over all of it.
func BenchmarkRedactSpillWithSecrets(b *testing.B) {
	secrets := "ANTHROPIC_API_KEY=" + fakeAnthropicKey + "\naws_access_key_id = " + fakeAWSKeyID +
		"\naws_secret_access_key = " + fakeAWSSecret + "\nGITHUB_TOKEN=ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d\n" +
		"Authorization: Bearer " + fakeBearerToken + "\nx-api-key: 0123abcd4567efgh\nDB_URL=postgres://app:Pa55w0rd@db/app\n" +
		"DB_PASSWORD=s3cr3t-Pa55\nglpat-Ab3dEf6hIj9kLm2nOp5q xoxb-1234567890-abcdef sk_live_Ab3dEf6hIj9kLm2nOp5q\n" + fakePrivateKey
	spill := append([]byte(secrets), cleanSpill(1<<20-len(secrets))...)
	red := DefaultRedactor()
	b.SetBytes(int64(len(spill)))
	b.ResetTimer()
	cpu0, measured := cpuTime()
	for i := 0; i < b.N; i++ {
		red.Redact(spill)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/MiB")
	if cpu1, _ := cpuTime(); measured && cpu1 > cpu0 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e6/float64(b.N), "cpu-ms/MiB")
	}
}
