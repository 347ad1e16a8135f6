package mockllm

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
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
	checkResponsesFrames(t, same, s, n, idx)
}

// checkResponsesFrames compares the Responses appenders with the maps the
// server encoded before they were appended by hand.
func checkResponsesFrames(t testing.TB, same func(kind, got, want string), s, n string, idx int) {
	t.Helper()
	part := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	}
	msg := rOutItem{id: n, text: s}
	call := rOutItem{id: n, call: true, callID: s, name: n, args: s, incomplete: idx%2 == 1}
	callStatus := "completed"
	if call.incomplete {
		callStatus = "incomplete"
	}
	msgMap := map[string]any{"id": n, "type": "message", "status": "completed", "role": "assistant", "content": []any{part(s)}}
	callMap := map[string]any{"id": n, "type": "function_call", "status": callStatus, "call_id": s, "name": n, "arguments": s}
	event := func(typ string, fields map[string]any) string {
		fields["type"] = typ
		fields["sequence_number"] = idx
		return reference(t, fields)
	}
	u := trajectory.Usage{InputTokens: int64(idx), OutputTokens: 7, CacheReadTokens: 3, CacheCreationTokens: int64(len(s))}
	in := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	usageMap := map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + u.OutputTokens}
	h := rResponse{id: s, created: int64(idx) * 1e9, model: n}
	for _, c := range []struct {
		status, incomplete string
		items              []rOutItem
		usage              *trajectory.Usage
	}{{"in_progress", "", nil, nil}, {"completed", "", []rOutItem{msg, call}, &u}, {s, n, []rOutItem{call}, &u}, {"", "", nil, &u}} {
		var status, incomplete, usage any
		if c.status != "" {
			status = c.status
		}
		if c.incomplete != "" {
			incomplete = map[string]string{"reason": c.incomplete}
		}
		if c.usage != nil {
			usage = usageMap
		}
		items := []map[string]any{}
		for _, it := range c.items {
			if it.call {
				items = append(items, callMap)
			} else {
				items = append(items, msgMap)
			}
		}
		resp := map[string]any{
			"id": s, "object": "response", "created_at": h.created, "status": status,
			"error": nil, "incomplete_details": incomplete, "instructions": nil, "max_output_tokens": nil,
			"model": n, "output": items, "parallel_tool_calls": true, "previous_response_id": nil,
			"temperature": 1.0, "tool_choice": "auto", "tools": []any{}, "top_p": 1.0,
			"text": map[string]any{"format": map[string]any{"type": "text"}}, "metadata": map[string]any{},
			"usage": usage,
		}
		same("responses response", string(h.append(nil, c.status, c.incomplete, c.items, c.usage)), reference(t, resp))
		same("responses response event", string(appendRResponseEvent(nil, idx, "response.completed", &h, c.status, c.incomplete, c.items, c.usage)),
			event("response.completed", map[string]any{"response": resp}))
	}
	same("responses message added", string(appendRItemAdded(nil, idx, idx, &msg)), event(rItemAdded, map[string]any{"output_index": idx,
		"item": map[string]any{"id": n, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}}))
	same("responses call added", string(appendRItemAdded(nil, idx, idx, &call)), event(rItemAdded, map[string]any{"output_index": idx,
		"item": map[string]any{"id": n, "type": "function_call", "status": "in_progress", "call_id": s, "name": n, "arguments": ""}}))
	same("responses message done", string(appendRItemDone(nil, idx, idx, &msg)), event(rItemDone, map[string]any{"output_index": idx, "item": msgMap}))
	same("responses call done", string(appendRItemDone(nil, idx, idx, &call)), event(rItemDone, map[string]any{"output_index": idx, "item": callMap}))
	for _, typ := range []string{rPartAdded, rPartDone} {
		same("responses part", string(appendRPart(nil, idx, typ, idx, n, s)), event(typ, map[string]any{"item_id": n, "output_index": idx, "content_index": 0, "part": part(s)}))
	}
	same("responses text delta", string(appendRTextDelta(nil, idx, idx, n, s)),
		event(rTextDelta, map[string]any{"item_id": n, "output_index": idx, "content_index": 0, "delta": s, "logprobs": []any{}}))
	same("responses text done", string(appendRTextDone(nil, idx, idx, n, s)),
		event(rTextDone, map[string]any{"item_id": n, "output_index": idx, "content_index": 0, "text": s, "logprobs": []any{}}))
	same("responses args delta", string(appendRArgsDelta(nil, idx, idx, n, s)),
		event(rArgsDelta, map[string]any{"item_id": n, "output_index": idx, "delta": s}))
	same("responses args done", string(appendRArgsDone(nil, idx, idx, &call)),
		event(rArgsDone, map[string]any{"item_id": n, "output_index": idx, "name": n, "arguments": s}))
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
