package llm

import "github.com/retrace-dev/retrace/trajectory"

// NormalizeStopReason maps a provider's stop reason (Anthropic stop_reason,
// OpenAI Chat finish_reason, OpenAI Responses status/incomplete reason, and
// the Gemini finish reasons other agents report in OTLP traces) to
// the closed set by whitelist: anything not listed is StopUnknown, and ""
// (missing or null) is StopMissing. Neither is ever "done" (a whitelist fails closed on values nobody has seen yet).
func NormalizeStopReason(raw string) trajectory.StopReason {
	switch raw {
	case "":
		return trajectory.StopMissing
	case "tool_use", "tool_calls", "function_call":
		return trajectory.StopToolUse
	case "end_turn", "stop", "completed", "STOP":
		return trajectory.StopEndTurn
	case "max_tokens", "length", "max_output_tokens", "MAX_TOKENS":
		return trajectory.StopMaxTokens
	case "stop_sequence":
		return trajectory.StopStopSequence
	case "refusal":
		return trajectory.StopRefusal
	case "content_filter", "SAFETY":
		return trajectory.StopContentFilter
	}
	return trajectory.StopUnknown
}
