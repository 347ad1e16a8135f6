// Package llm is the model layer of the runtime: one provider-neutral
// request and response (messages are trajectory.Message, so a conversation
// has one representation everywhere), stop reasons normalised by
// whitelist, typed errors classified from status codes, and the Provider
// interface that the real Anthropic and OpenAI clients and mockllm's
// scripted and replaying models implement.
package llm
