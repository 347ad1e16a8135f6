// Package otlp moves retrace sessions to and from OpenTelemetry traces, so
// that any OTel backend (Jaeger, Tempo, Langfuse, Phoenix, a Collector)
// shows them and so that traces other agents emit can be analysed by
// retrace.
//
// # Export
//
// Each trajectory session becomes one trace that follows the OTel GenAI
// semantic conventions, version 1.41.0 (SchemaURL): the session is the
// root span `invoke_agent {agent}`, each model turn a child `chat {model}`
// (model_request to model_response) and each tool call a child
// `execute_tool {tool}`. Attributes use gen_ai.* where the conventions
// name the value (gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model, gen_ai.usage.input_tokens/output_tokens,
// gen_ai.response.finish_reasons, gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.conversation.id), error.type for a failed call (its failure_kind)
// and retrace.* for everything else.
//
// Times are the recording's own: a tool span ends when its tool_end was
// recorded and lasts exactly the tool's duration_ms, so a backend's
// per-span duration is the tool's measured run time, never a batch's. A
// call whose duration is unknown (duration_unknown, or no tool_end at all)
// gets a zero-length span at its tool_call's time with
// retrace.tool.duration_unknown = true, never an invented duration; a call
// whose tool never started (not_run) has retrace.tool.not_run = true.
//
// Trace and span ids are derived from the session id and the seq of the
// event that opens the span, so exporting a session again sends the very
// same ids and a backend that deduplicates by id keeps one copy. The
// OpenTelemetry SDK cannot be told a span's id (its IDGenerator draws ids
// without knowing the span), so this package builds the OTLP request
// itself with the official protobuf types (go.opentelemetry.io/proto/otlp)
// and sends it as OTLP/HTTP protobuf; it also writes the same traces as an
// OTLP/JSON file.
//
// # Import
//
// Import reads OTLP/JSON trace files (one TracesData object, or one per
// line as the Collector's file exporter writes them) and writes each trace
// that holds GenAI spans as a trajectory through the recorder: chat spans
// become model turns, execute_tool spans tool calls with their span's
// duration as the tool's duration (observed: transcript), or
// duration_unknown where the span says so, or not_run (no duration) for a
// call refused before it ran (error.type naming a failure kind that never
// runs, or retrace.tool.not_run). A failed call's error_code is
// retrace.tool.error_code or else error.type, kept only in the closed
// format of trajectory.IsErrorCode: another agent's own code (an exception
// class) is recorded as other. Spans of other operations are
// counted and reported, never fatal; input that is not OTLP/JSON is an
// error naming the file, line and JSON path.
package otlp
