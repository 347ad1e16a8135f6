// Package llm is the model layer of the runtime: one provider-neutral
// request and response (messages are trajectory.Message, so a conversation
// has one representation everywhere), stop reasons normalised by
// whitelist, typed errors classified from status codes, and the Provider
// interface that the real Anthropic and OpenAI clients and mockllm's
// scripted and replaying models implement.
//
// Request.Cache asks for prompt caching: the Anthropic client
// sends cache_control breakpoints after the last tool, after the system
// prompt, at the end of the previous user message and at the
// conversation's tail (DefaultCachePoints; at most MaxCachePoints); the
// OpenAI clients send nothing, as those APIs cache long prefixes by
// themselves, and read the cached part back from
// prompt_tokens_details / input_tokens_details.cached_tokens. Every
// client reports usage with InputTokens excluding the cached part, so
// input + cache read + cache write is the whole prompt.
package llm
