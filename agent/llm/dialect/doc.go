// Package dialect rewrites a tool's input JSON Schema, as the tools
// generate it, into the subset each provider family accepts.
// The difference between families is not a flag but a rewrite of the whole
// tree: required and additionalProperties can sit at any depth, in array
// items and in every branch of a union, so each dialect is a descriptor
// (which keywords pass, which are dropped, which move into the
// description, which are refused) applied node by node.
//
// The two families' strict rules are opposite. Anthropic keeps
// optional parameters optional and supports default, but not numeric
// constraints; OpenAI strict mode requires every property, expresses
// "optional" as nullable, closes every object, and supports numeric
// constraints but not default. So there is one rewrite per family, never a
// shared sanitizer that would impose the stricter side's limits on the
// other. A constraint a dialect does not accept is moved into
// the node's description as text rather than dropped: the
// model still reads it, and the runtime still validates the call against
// the neutral schema. Keys that belong to no protocol, such as $schema, are
// dropped everywhere.
//
// What no input reaches is refused, not rewritten: OpenAI strict mode
// rejects oneOf, and no schema retrace generates contains one, so
// OpenAIStrict returns an Error naming the path instead of a speculative
// rewrite. The Anthropic subset follows Anthropic's
// documentation and the official SDK's transform; it is a conservative
// shaping by documented subset, not a fix for an observed rejection.
//
// A schema retrace did not write — an MCP server's — may well hold what
// strict mode refuses, so OpenAIPerTool decides per tool: strict when the
// strict rewrite succeeds, else the OpenAI (strict off) form and the
// refusal as the reason, which the session records in its catalog. One
// server's oneOf then costs that tool its strictness, not every request of
// the session. CheckOpenAIStrict checks a schema the way the API checks a
// strict function, for the mock LLM.
//
// Output is compact JSON with keys in input order and without HTML
// escaping, so the same schema always yields the same bytes for the
// provider's prompt cache.
package dialect
