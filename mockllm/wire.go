package mockllm

import (
	"strconv"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// The stream frames sent many times per reply (deltas, block starts and
// stops, Chat chunks, every Responses event) are appended by hand instead of going through
// encoding/json's reflection, which was most of the CPU of a streamed reply
// once the frames were sent together. Each appender writes exactly the bytes
// encoding/json writes for the matching struct (with HTML escaping off);
// wire_test.go checks that against encoding/json for every frame kind and
// fuzzes the string escaping.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with SetEscapeHTML(false): quote, backslash and control
// characters, U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNullableString appends s as a JSON string, or null when it is nil.
func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}

// Anthropic Messages frames.

// appendBlockDelta appends a content_block_delta event whose delta has one
// string field: text_delta/text, input_json_delta/partial_json,
// thinking_delta/thinking or signature_delta/signature.
func appendBlockDelta(dst []byte, index int, deltaType, field, value string) []byte {
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, deltaType...)
	dst = append(dst, `","`...)
	dst = append(dst, field...)
	dst = append(dst, `":`...)
	dst = appendJSONString(dst, value)
	return append(dst, "}}"...)
}

// appendBlockStart appends a content_block_start event for a text,
// thinking or tool_use block (id and name are the tool_use's).
func appendBlockStart(dst []byte, index int, blockType, id, name string) []byte {
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	switch blockType {
	case "text":
		dst = append(dst, `,"content_block":{"type":"text","text":""}`...)
	case "thinking":
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}`...)
	default:
		dst = append(dst, `,"content_block":{"type":"tool_use"`...)
		if id != "" {
			dst = append(dst, `,"id":`...)
			dst = appendJSONString(dst, id)
		}
		if name != "" {
			dst = append(dst, `,"name":`...)
			dst = appendJSONString(dst, name)
		}
		dst = append(dst, `,"input":{}}`...)
	}
	return append(dst, '}')
}

// appendBlockStop appends a content_block_stop event.
func appendBlockStop(dst []byte, index int) []byte {
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return append(dst, '}')
}

// appendMessageDelta appends the message_delta event that ends a reply.
func appendMessageDelta(dst []byte, stopReason *string, u aUsage) []byte {
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":`...)
	dst = appendNullableString(dst, stopReason)
	dst = append(dst, `,"stop_sequence":null},"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.InputTokens, 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.OutputTokens, 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheCreationInputTokens, 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheReadInputTokens, 10)
	return append(dst, "}}"...)
}

// OpenAI Chat Completions chunks.

// chatChunk renders the chunks of one streamed Chat reply: the envelope
// (id, created, model, ...) is the same in every chunk, so it is rendered
// once and only the delta is appended per chunk.
type chatChunk struct {
	head []byte // {"id":...,"choices":[{"index":0,"delta":
	tail []byte // ,"usage":...,"service_tier":"default","system_fingerprint":null}
}

func newChatChunk(id string, created int64, model string, includeUsage bool) chatChunk {
	var c chatChunk
	c.head = append(c.head, `{"id":`...)
	c.head = appendJSONString(c.head, id)
	c.head = append(c.head, `,"object":"chat.completion.chunk","created":`...)
	c.head = strconv.AppendInt(c.head, created, 10)
	c.head = append(c.head, `,"model":`...)
	c.head = appendJSONString(c.head, model)
	c.head = append(c.head, `,"choices":[{"index":0,"delta":`...)
	if includeUsage {
		c.tail = append(c.tail, `,"usage":null`...)
	}
	c.tail = append(c.tail, `,"service_tier":"default","system_fingerprint":null}`...)
	return c
}

// appendChoice closes the choice of a chunk whose delta has been appended.
func (c *chatChunk) appendChoice(dst []byte, finish *string) []byte {
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	dst = appendNullableString(dst, finish)
	dst = append(dst, "}]"...)
	return append(dst, c.tail...)
}

// appendRole appends the first chunk: the assistant role, empty content.
func (c *chatChunk) appendRole(dst []byte) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"role":"assistant","content":""}`...)
	return c.appendChoice(dst, nil)
}

// appendContent appends a chunk of text.
func (c *chatChunk) appendContent(dst []byte, text string) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"content":`...)
	dst = appendJSONString(dst, text)
	dst = append(dst, '}')
	return c.appendChoice(dst, nil)
}

// appendToolCallStart appends the chunk that starts a tool call: its id,
// type, name and empty arguments.
func (c *chatChunk) appendToolCallStart(dst []byte, index int, id, name string) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	if id != "" {
		dst = append(dst, `,"id":`...)
		dst = appendJSONString(dst, id)
	}
	dst = append(dst, `,"type":"function","function":{`...)
	if name != "" {
		dst = append(dst, `"name":`...)
		dst = appendJSONString(dst, name)
		dst = append(dst, ',')
	}
	dst = append(dst, `"arguments":""}}]}`...)
	return c.appendChoice(dst, nil)
}

// appendToolCallArgs appends a chunk of a tool call's arguments.
func (c *chatChunk) appendToolCallArgs(dst []byte, index int, args string) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = appendJSONString(dst, args)
	dst = append(dst, "}}]}"...)
	return c.appendChoice(dst, nil)
}

// appendFinish appends the chunk with the finish_reason and an empty delta.
func (c *chatChunk) appendFinish(dst []byte, finish *string) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, "{}"...)
	return c.appendChoice(dst, finish)
}

// OpenAI Responses events. Their keys are in encoding/json's order for a
// map (sorted), the order the server wrote them in before they were
// appended by hand; every event ends with its sequence_number and type.

// Responses event types sent for every output item.
const (
	rItemAdded = "response.output_item.added"
	rItemDone  = "response.output_item.done"
	rPartAdded = "response.content_part.added"
	rPartDone  = "response.content_part.done"
	rTextDelta = "response.output_text.delta"
	rTextDone  = "response.output_text.done"
	rArgsDelta = "response.function_call_arguments.delta"
	rArgsDone  = "response.function_call_arguments.done"
)

// rOutItem is one output item of a Responses reply: an assistant message
// with its text, or a function call.
type rOutItem struct {
	id   string
	call bool // a function_call; otherwise a message
	text string
	// The function call's fields; incomplete when its arguments are not
	// a whole JSON object.
	callID, name, args string
	incomplete         bool
}

// rResponse is what every rendering of one response object shares.
type rResponse struct {
	id      string
	created int64
	model   string
}

// append appends the response object. status and incomplete ("" is null)
// come from responsesStatus; usage nil is null, as before the reply ends.
func (h *rResponse) append(dst []byte, status, incomplete string, items []rOutItem, usage *trajectory.Usage) []byte {
	dst = append(dst, `{"created_at":`...)
	dst = strconv.AppendInt(dst, h.created, 10)
	dst = append(dst, `,"error":null,"id":`...)
	dst = appendJSONString(dst, h.id)
	dst = append(dst, `,"incomplete_details":`...)
	if incomplete == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"reason":`...)
		dst = appendJSONString(dst, incomplete)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"instructions":null,"max_output_tokens":null,"metadata":{},"model":`...)
	dst = appendJSONString(dst, h.model)
	dst = append(dst, `,"object":"response","output":[`...)
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendROutItem(dst, &items[i])
	}
	dst = append(dst, `],"parallel_tool_calls":true,"previous_response_id":null,"status":`...)
	if status == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, status)
	}
	dst = append(dst, `,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"usage":`...)
	if usage == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendRUsage(dst, usage)
	}
	return append(dst, '}')
}

// appendRUsage appends a response's usage: input_tokens counts the cached
// tokens too, which input_tokens_details repeats.
func appendRUsage(dst []byte, u *trajectory.Usage) []byte {
	in := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, in, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheReadTokens, 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.OutputTokens, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = strconv.AppendInt(dst, in+u.OutputTokens, 10)
	return append(dst, '}')
}

// appendROutputText appends an output_text content part.
func appendROutputText(dst []byte, text string) []byte {
	dst = append(dst, `{"annotations":[],"logprobs":[],"text":`...)
	dst = appendJSONString(dst, text)
	return append(dst, `,"type":"output_text"}`...)
}

// appendROutItem appends a finished output item.
func appendROutItem(dst []byte, it *rOutItem) []byte {
	if !it.call {
		dst = append(dst, `{"content":[`...)
		dst = appendROutputText(dst, it.text)
		dst = append(dst, `],"id":`...)
		dst = appendJSONString(dst, it.id)
		return append(dst, `,"role":"assistant","status":"completed","type":"message"}`...)
	}
	dst = append(dst, `{"arguments":`...)
	dst = appendJSONString(dst, it.args)
	dst = append(dst, `,"call_id":`...)
	dst = appendJSONString(dst, it.callID)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, it.id)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, it.name)
	if it.incomplete {
		return append(dst, `,"status":"incomplete","type":"function_call"}`...)
	}
	return append(dst, `,"status":"completed","type":"function_call"}`...)
}

// appendREnd appends the keys every Responses event ends with.
func appendREnd(dst []byte, seq int, typ string) []byte {
	dst = append(dst, `,"sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, typ...)
	return append(dst, `"}`...)
}

// appendRResponseEvent appends an event that carries the response object
// (response.created, in_progress, completed, incomplete).
func appendRResponseEvent(dst []byte, seq int, typ string, h *rResponse, status, incomplete string, items []rOutItem, usage *trajectory.Usage) []byte {
	dst = append(dst, `{"response":`...)
	dst = h.append(dst, status, incomplete, items, usage)
	return appendREnd(dst, seq, typ)
}

// appendRItemAdded appends response.output_item.added: the item in
// progress, without its content.
func appendRItemAdded(dst []byte, seq, index int, it *rOutItem) []byte {
	if !it.call {
		dst = append(dst, `{"item":{"content":[],"id":`...)
		dst = appendJSONString(dst, it.id)
		dst = append(dst, `,"role":"assistant","status":"in_progress","type":"message"}`...)
	} else {
		dst = append(dst, `{"item":{"arguments":"","call_id":`...)
		dst = appendJSONString(dst, it.callID)
		dst = append(dst, `,"id":`...)
		dst = appendJSONString(dst, it.id)
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, it.name)
		dst = append(dst, `,"status":"in_progress","type":"function_call"}`...)
	}
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return appendREnd(dst, seq, rItemAdded)
}

// appendRItemDone appends response.output_item.done: the finished item.
func appendRItemDone(dst []byte, seq, index int, it *rOutItem) []byte {
	dst = append(dst, `{"item":`...)
	dst = appendROutItem(dst, it)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return appendREnd(dst, seq, rItemDone)
}

// appendRPart appends response.content_part.added (typ rPartAdded, text
// "") or response.content_part.done (rPartDone, the whole text).
func appendRPart(dst []byte, seq int, typ string, index int, itemID, text string) []byte {
	dst = append(dst, `{"content_index":0,"item_id":`...)
	dst = appendJSONString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"part":`...)
	dst = appendROutputText(dst, text)
	return appendREnd(dst, seq, typ)
}

// appendRTextDelta appends response.output_text.delta.
func appendRTextDelta(dst []byte, seq, index int, itemID, delta string) []byte {
	dst = append(dst, `{"content_index":0,"delta":`...)
	dst = appendJSONString(dst, delta)
	dst = append(dst, `,"item_id":`...)
	dst = appendJSONString(dst, itemID)
	dst = append(dst, `,"logprobs":[],"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return appendREnd(dst, seq, rTextDelta)
}

// appendRTextDone appends response.output_text.done, whose text sorts
// after sequence_number.
func appendRTextDone(dst []byte, seq, index int, itemID, text string) []byte {
	dst = append(dst, `{"content_index":0,"item_id":`...)
	dst = appendJSONString(dst, itemID)
	dst = append(dst, `,"logprobs":[],"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `,"text":`...)
	dst = appendJSONString(dst, text)
	return append(dst, `,"type":"`+rTextDone+`"}`...)
}

// appendRArgsDelta appends response.function_call_arguments.delta.
func appendRArgsDelta(dst []byte, seq, index int, itemID, delta string) []byte {
	dst = append(dst, `{"delta":`...)
	dst = appendJSONString(dst, delta)
	dst = append(dst, `,"item_id":`...)
	dst = appendJSONString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return appendREnd(dst, seq, rArgsDelta)
}

// appendRArgsDone appends response.function_call_arguments.done.
func appendRArgsDone(dst []byte, seq, index int, it *rOutItem) []byte {
	dst = append(dst, `{"arguments":`...)
	dst = appendJSONString(dst, it.args)
	dst = append(dst, `,"item_id":`...)
	dst = appendJSONString(dst, it.id)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, it.name)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	return appendREnd(dst, seq, rArgsDone)
}
