// Package mockllm provides models that never call a real API, so agents
// can be tested deterministically and offline: Script (answers from a
// YAML file of turns), Replay (answers with the model_response events of a
// recorded trajectory) and Server, an HTTP server that speaks the
// Anthropic Messages, OpenAI Chat Completions and OpenAI Responses
// protocols — JSON and SSE — so an agent built on the official SDKs can be
// pointed at it unchanged (ANTHROPIC_BASE_URL=http://127.0.0.1:PORT,
// OPENAI_BASE_URL=http://127.0.0.1:PORT/v1).
//
// Script and Replay are llm.Provider values for in-process use and
// Source values for the Server. The Server validates requests like the
// real APIs (a tool_use/tool_result pairing broken gives HTTP
// 400 with the real error body), injects faults, and keeps the latest few
// requests (Requests, Options.KeepRequests) so a test can assert on what
// the agent sent. Beyond those it keeps only counters (Stats), so its
// memory is flat however long it serves.
//
// Options has a hook for each moment of a model call: OnAccept when the
// request is decoded and its reply chosen, OnAnswer just before the last
// bytes of a complete reply are sent, OnRequest after the answer (for
// logging). A Transcript fed from all three writes a trajectory event by
// event, so a killed server leaves every reply a client received on disk.
//
// # Real clients
//
// The requests of Claude Code and Codex are accepted as the real APIs
// accept them (testdata/wire holds captured bodies of both). A role
// "system" message among the Anthropic messages, which Claude Code sends
// under the per-turn-control and mid-conversation-tool-changes betas, is
// accepted when the anthropic-beta header names one of them (and refused
// with the API's error otherwise); its text joins the system prompt, as
// the OpenAI dialects fold system and developer messages, and the
// tool_use/tool_result pairing is checked on the messages around it.
// Claude Code's reachability check, HEAD /api/hello, gets 200.
//
// # Recording
//
// A Transcript records what is on the wire, and says so: a tool_use
// answered by a tool_result in the next request becomes tool_call,
// tool_success or tool_failure, tool_end and tool_result, marked observed
// "wire". The outcome is read by the classifier of the client the
// requests come from (package tooloutcome, chosen by the User-Agent), the
// one retrace import uses on the client's transcript, so both agree; a
// result no rule recognises is a tool_failure of kind unknown. The call's
// own run time is on the wire only when the client states it (Codex's
// wall time); otherwise tool_end's duration_ms is 0 and the next
// model_request carries the batch's wall time as batch_ms. Model responses carry the measured
// duration_ms and ttft_ms. Every failed attempt is a model_error: an
// injected status, a request refused before the source answered (with
// the tool results it carried), a malformed reply (invalid_response), one
// the client hung up on (aborted, undelivered). NewTranscriptSessions
// gives each conversation its own session, a subagent's linked to the
// parent session and the tool_use whose input holds its prompt. Each
// request is matched to its own hooks by Logged.ID, so many clients in
// one conversation have each request recorded once with its own outcome;
// requests that overlap go to further sessions of the conversation
// (lanes), since a trajectory holds one request at a time. When the
// recording cannot be written, OnAccept and OnAnswer return the error and
// the server does not serve the reply: the client gets HTTP 500.
//
// Connections have a read-header, a read (whole request) and an idle
// timeout (Options.ReadHeaderTimeout, ReadTimeout, IdleTimeout); a client
// that is too slow or idle is cut and reported to Options.OnCut with its
// address and the timeout that ran out. Replies are not limited, so an
// injected stall lasts as long as it says.
//
// # Scripts
//
// A script is a list of turns; request N gets turn N:
//
//	model: mock-1                 # default "mock-1"; reported by /v1/models and when a request names no model
//	repeat: false                 # true: start over after the last turn instead of failing
//	turns:
//	  - expect:                   # optional checks on the request this turn answers
//	      last_user_contains: README
//	    content:
//	      - text: "I'll read it."
//	      - tool_use: {id: toolu_1, name: read, input: {file_path: README.md}}
//	    usage: {input_tokens: 1200, output_tokens: 80, cache_read_tokens: 0, cache_creation_tokens: 0}
//	  - expect:
//	      tool_results: [{tool_use_id: toolu_1, is_error: false}]
//	      system_contains: "You are"
//	      tools: [read]           # tools the request must offer
//	    content:
//	      - thinking: "The file says..."
//	      - text: "Done."
//
// A turn's keys:
//
//	content      text, tool_use {id, name, input} and thinking blocks, in order; ids default to toolu_mock_TURN_BLOCK
//	stop_reason  end_turn, tool_use, max_tokens, stop_sequence, pause_turn, refusal or
//	             model_context_window_exceeded; default tool_use when content has a tool_use, else end_turn.
//	             The OpenAI endpoints translate it (tool_use → tool_calls, max_tokens → length, ...).
//	usage        token counts to report; default: an estimate of four bytes a token, split by the
//	             prompt cache (see Prompt caching)
//	expect       tool_results (in the last user message, is_error optional), last_user_contains,
//	             system_contains, tools
//	fault        see below
//
// The reply's model is the request's model (unknown models are accepted
// and echoed, like an alias resolves), or the script's model when the
// request names none.
//
// A request that misses an expectation gets HTTP 400 and a *TurnError
// naming the turn and the field ("turn 2: expected a tool_result for
// toolu_2 with is_error true, the request has none ..."); the turn is
// not used up. A request after the last turn gets HTTP 500 naming the
// turn number (ErrOutOfTurns). Both carry x-should-retry: false, which the
// official SDKs honour. Script.Verify reports these and unused turns at
// the end of a test. Parse errors read file:line: what is wrong and how
// to fix it; unknown keys are errors, so a typo never drops a check.
//
// # Conversations
//
// An agent that runs subagents, or several sessions at once, interleaves
// the requests of several conversations. A script gives each its own
// turns; a request goes to the first conversation whose match holds
// (every key given must hold) and gets that conversation's next turn:
//
//	conversations:
//	  - name: main                            # default: its number
//	    match: {system_contains: "official CLI for Claude"}
//	    turns: [...]
//	  - name: explore
//	    match: {header: explore}              # the X-Retrace-Conversation request header
//	    turns: [...]                          # or first_user_contains: TEXT
//
// A request that matches no conversation gets HTTP 400 naming the
// matchers (ErrNoConversation); TurnError names the conversation; Verify
// reports unused turns per conversation. Default tool_use ids carry the
// conversation's number. A `turns:` script can be routed with
// ScriptOptions.Route instead: RouteHeader gives each ConversationHeader
// value, RoutePrompt each system prompt and first user message
// (PromptKey), its own pass over the turns. At most
// ScriptOptions.MaxConversations are tracked (DefaultMaxConversations);
// one more is ErrTooManyConversations, never a shared turn sequence.
//
// # Replay modes
//
// Replay answers from a recording with one of the Mode values, all of
// which fail closed (a *MissError wrapping llm.ErrReplayMiss, HTTP 500
// with x-should-retry: false; never a made-up answer or a live call):
//
//	ModeOrdered  the n-th request gets the n-th recorded response; with
//	             RoutePrompt, the n-th of its own conversation
//	ModeMatch    the response whose recorded request asked the same
//
// A request matches a recorded one when it has the same tools (the hash
// of their definitions), the same system prompt and the same messages,
// the prompt and each message compared after Normalize (UUIDs,
// timestamps, dates, clock times, durations, temporary paths and long
// hex ids replaced by placeholders). The recorded request is rebuilt
// from its model_request event — the messages it added, on top of the
// previous request's — and checked against the event's message hashes;
// one that cannot be rebuilt matches only on the exact hashes. Of several
// unused matches the first in the recording answers, so a request asked
// twice gets the two recorded answers in order, and a third time misses.
// There is no nearest-match fallback: a miss names the recorded request
// that shares the longest message prefix and the first message that
// differs, and answers nothing. A recording whose responses do not answer
// the requests before them (concurrent conversations recorded into one
// session) is refused at load with ErrMispaired for ModeMatch and
// RoutePrompt, as serving it would hand one conversation another's reply.
//
// # Faults
//
//	fault:
//	  status: 529                 # fail with this HTTP status (429, 500, 503, 529, ...)
//	  retry_after: 1s             # sent as Retry-After (whole seconds) and Retry-After-Ms
//	  times: 1                    # attempts that fail before the turn succeeds (default 1)
//	  max_tokens_in_tool_use: true  # cut the last tool_use's input in half; stop max_tokens / finish length
//	  missing_stop_reason: true   # null stop_reason / finish_reason / status
//	  stall: 5s                   # stop sending after the first delta (before the first byte
//	                              # of a JSON reply) for this long, or until the client gives up
//	  malformed_sse: true         # send a broken frame after the first delta and end the reply
//	                              # (a JSON reply is cut in half)
//
// A status fault applies to the first attempts; the other faults shape the
// attempt that succeeds. In process, a status fault is an *llm.Error of
// the kind the real clients classify (429 rate_limited, 529 overloaded,
// 5xx server_error), a malformed reply is invalid_response, and a stall
// waits for the context.
//
// # Prompt caching
//
// A turn without usage reports what the provider's prompt cache would
// (cache.go), so that a cache breaker shows offline as a drop
// of cache reads. Each conversation keeps its own cache. Entries are keyed
// by the hash of a whole prefix in the provider's order — tool
// definitions, then the system prompt, then each message block — so one
// changed byte misses everything after it.
//
// On the Anthropic wire a request writes an entry at each cache_control
// breakpoint it carries (at most 4, or HTTP 400 with the API's message;
// ttl 5m or 1h) whose prefix is at least 1024 tokens, and reads the
// longest prefix an earlier request wrote, found at one of its own
// breakpoints or up to 20 blocks before one. cache_read_input_tokens is
// that prefix, cache_creation_input_tokens the part up to the last
// breakpoint written now, input_tokens the rest. In process (the runtime
// calling a Script directly), a request's llm.Cache without points stands
// for the breakpoints the Anthropic client would send
// (llm.DefaultCachePoints). The OpenAI endpoints cache without being
// asked: the longest prefix shared with an earlier request of the
// conversation, from 1024 tokens in steps of 128, is reported as
// cached_tokens, and no write is reported. All counts use the mock's
// estimate of four bytes a token, so input + cache read + cache write is
// the estimate a request without caching reports. A recording replayed
// (Replay) reports the usage it recorded.
//
// # Streams
//
// Streams follow the real event sequences: Anthropic message_start, ping,
// content_block_start/delta/stop per block (tool input as input_json_delta
// in several chunks), message_delta, message_stop; Chat Completions chunks
// with the role first, content and tool_calls deltas by index, a
// finish_reason chunk, a usage chunk when stream_options.include_usage,
// then [DONE]; Responses events from response.created to
// response.completed (response.incomplete when cut), each with an
// increasing sequence_number.
package mockllm
