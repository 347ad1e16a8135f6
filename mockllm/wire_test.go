package mockllm

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The reference shapes of the hand-encoded frames: what encoding/json
// writes for them is what the appenders of wire.go must write.

type aDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

type aMessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// reference encodes v as the server did before the frames were
// hand-encoded: encoding/json without HTML escaping.
func reference(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// checkFrames compares every hand-encoded frame kind with encoding/json for
// the strings s (a text or an id) and n (a name).
func checkFrames(t testing.TB, s, n string, idx int) {
	t.Helper()
	same := func(kind, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s frame for %q, %q:\n got %s\nwant %s", kind, s, n, got, want)
		}
	}
	same("string", string(appendJSONString(nil, s)), reference(t, s))
	for _, d := range []struct {
		typ, field string
		delta      aDelta
	}{
		{"text_delta", "text", aDelta{Type: "text_delta", Text: &s}},
		{"input_json_delta", "partial_json", aDelta{Type: "input_json_delta", PartialJSON: &s}},
		{"thinking_delta", "thinking", aDelta{Type: "thinking_delta", Thinking: &s}},
		{"signature_delta", "signature", aDelta{Type: "signature_delta", Signature: &s}},
	} {
		same(d.typ, string(appendBlockDelta(nil, idx, d.typ, d.field, s)),
			reference(t, aStreamEvent{Type: "content_block_delta", Index: &idx, Delta: d.delta}))
	}
	empty := ""
	same("text start", string(appendBlockStart(nil, idx, "text", "", "")),
		reference(t, aStreamEvent{Type: "content_block_start", Index: &idx, ContentBlock: &aOutBlk{Type: "text", Text: &empty}}))
	same("thinking start", string(appendBlockStart(nil, idx, "thinking", "", "")),
		reference(t, aStreamEvent{Type: "content_block_start", Index: &idx, ContentBlock: &aOutBlk{Type: "thinking", Thinking: &empty, Signature: &empty}}))
	same("tool_use start", string(appendBlockStart(nil, idx, "tool_use", s, n)),
		reference(t, aStreamEvent{Type: "content_block_start", Index: &idx, ContentBlock: &aOutBlk{Type: "tool_use", ID: s, Name: n, Input: json.RawMessage(`{}`)}}))
	same("block stop", string(appendBlockStop(nil, idx)), reference(t, aStreamEvent{Type: "content_block_stop", Index: &idx}))
	u := aUsage{InputTokens: int64(idx) * 1000, OutputTokens: 7, CacheCreationInputTokens: 3, CacheReadInputTokens: int64(len(s))}
	for _, stop := range []*string{nil, &s} {
		same("message_delta", string(appendMessageDelta(nil, stop, u)),
			reference(t, aStreamEvent{Type: "message_delta", Delta: aMessageDelta{StopReason: stop}, Usage: &u}))
	}
	for _, usage := range []bool{false, true} {
		cc := newChatChunk(s, int64(idx)*1e9, n, usage)
		var nullUsage json.RawMessage
		if usage {
			nullUsage = json.RawMessage("null")
		}
		chunk := func(d *cDelta, finish *string) string {
			return reference(t, cCompletion{ID: s, Object: "chat.completion.chunk", Created: int64(idx) * 1e9, Model: n,
				Choices: []cChoice{{Delta: d, FinishReason: finish}}, Usage: nullUsage, ServiceTier: "default"})
		}
		same("chat role", string(cc.appendRole(nil)), chunk(&cDelta{Role: "assistant", Content: &empty}, nil))
		same("chat content", string(cc.appendContent(nil, s)), chunk(&cDelta{Content: &s}, nil))
		same("chat tool call start", string(cc.appendToolCallStart(nil, idx, s, n)),
			chunk(&cDelta{ToolCalls: []cOutToolCall{{Index: &idx, ID: s, Type: "function", Function: cFunction{Name: n}}}}, nil))
		same("chat tool call args", string(cc.appendToolCallArgs(nil, idx, s)),
			chunk(&cDelta{ToolCalls: []cOutToolCall{{Index: &idx, Function: cFunction{Arguments: s}}}}, nil))
		for _, finish := range []*string{nil, &n} {
			same("chat finish", string(cc.appendFinish(nil, finish)), chunk(&cDelta{}, finish))
		}
	}
}

func TestHandEncodedFramesAreWhatEncodingJSONWrites(t *testing.T) {
	cases := []struct {
		name string
		s, n string
		idx  int
	}{
		{"plain ASCII text", "Reading the README.", "read", 0},
		{"empty strings", "", "", 3},
		{"quotes, backslashes and JSON input", `{"file_path":"C:\\dir\\a \"b\".go"}`, "edit", 1},
		{"every control character", "\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f", "x\ny", 12},
		{"HTML characters stay unescaped", "<a href='x'>&amp;</a>", "<b>", 2},
		{"multi-byte UTF-8, emoji and line separators", "ünïcode 日本 🦀 \u2028 \u2029 end", "名前", 40},
		{"invalid UTF-8 becomes U+FFFD", "bad \xff\xfe byte, cut \xe6\x97 rune", "\xc0", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkFrames(t, c.s, c.n, c.idx) })
	}
}

// FuzzHandEncodedFrames checks the appenders against encoding/json for
// any text, id and name.
func FuzzHandEncodedFrames(f *testing.F) {
	f.Add("Reading.", "read", 0)
	f.Add(`{"a":"\u2028\"\\"}`, "名", 7)
	f.Add("\x00\xff\n\t<>&", "", 1<<20)
	f.Fuzz(func(t *testing.T, s, n string, idx int) {
		if idx < 0 {
			idx = -idx
		}
		checkFrames(t, s, n, idx%1_000_000)
	})
}
