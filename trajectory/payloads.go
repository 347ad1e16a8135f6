package trajectory

import "encoding/json"

// Fields without omitempty are required: the decoder rejects a line that
// lacks one, and the generated JSON Schema lists them as required. Booleans
// are always optional and default to false.
//
// Top-level field names are shared across payloads only with the same JSON
// type, so that the flat JSONL maps onto one column schema (DuckDB).

// ToolInfo describes one tool of the session's catalog as the tool declares itself.
type ToolInfo struct {
	// Name is the tool name sent to the model.
	Name string `json:"name"`
	// DefinitionHash is the Hash of the definition bytes sent to the model.
	DefinitionHash string `json:"definition_hash"`
	// Definition is the definition as sent (name, description, schema), when recorded.
	Definition json.RawMessage `json:"definition,omitempty"`
	// Source says whether the tool is built in or comes from an MCP server.
	Source ToolSource `json:"source"`
	// Deferred tools are not sent until tool_search activates them.
	Deferred bool `json:"deferred,omitempty"`
	// ReadOnly tools never change the workspace.
	ReadOnly bool `json:"read_only,omitempty"`
	// Display is how the tool's results are shown to the user.
	Display DisplayMode `json:"display"`
	// NonStrict, when set, says why the provider sent this tool with
	// OpenAI's strict mode off although strict mode is on for the others:
	// the strict rewrite's refusal, naming the schema path (an MCP
	// server's oneOf, say). Empty when the tool is sent strict or the
	// provider has no strict mode.
	NonStrict string `json:"non_strict,omitempty"`
}

func (t *ToolInfo) validate(c *checks) {
	c.toolName("name", t.Name)
	c.hash("definition_hash", t.DefinitionHash)
	if len(t.Definition) > 0 && !json.Valid(t.Definition) {
		c.fail("definition", ErrMalformed, "not valid JSON")
	}
	checkEnum(c, "source", t.Source, toolSources)
	checkEnum(c, "display", t.Display, displayModes)
}

// Limits are the session's configured bounds; zero means unbounded (for
// ContextTokens: the runtime's default; for MaxTokens: the provider's).
// Every field is optional, so a v1 file that records only the first three
// still reads; a replay rebuilds the session's limits from all of them.
type Limits struct {
	MaxTurns    int     `json:"max_turns,omitempty"`
	TokenBudget int64   `json:"token_budget,omitempty"`
	CostBudget  float64 `json:"cost_budget_usd,omitempty"`
	// MaxTokens is the max_tokens of each request.
	MaxTokens int `json:"max_tokens,omitempty"`
	// ContextTokens is the estimated history size above which the oldest
	// tool results are dropped.
	ContextTokens int64 `json:"context_tokens,omitempty"`
	// The prices, in US dollars per million tokens, that the cost budget
	// and session_end's cost are computed with.
	InputPerMTok      float64 `json:"input_per_mtok,omitempty"`
	OutputPerMTok     float64 `json:"output_per_mtok,omitempty"`
	CacheReadPerMTok  float64 `json:"cache_read_per_mtok,omitempty"`
	CacheWritePerMTok float64 `json:"cache_write_per_mtok,omitempty"`
	// ContextWindow is the model's context window when the configuration
	// gave it (absent when the built-in model table or the default gave
	// it), CompactThreshold the fraction of it at which the loop compacts,
	// and Compaction the strategy (drop or summarize); all optional.
	ContextWindow    int64              `json:"context_window,omitempty"`
	CompactThreshold float64            `json:"compact_threshold,omitempty"`
	Compaction       CompactionStrategy `json:"compaction,omitempty"`
}

// SessionStart opens a session: what ran, with which tools, under which policy.
type SessionStart struct {
	// HarnessVersion is the version of the program that recorded the
	// session (retrace's module version, or "devel" for a build from a
	// checkout).
	HarnessVersion string `json:"harness_version"`
	// HarnessRevision is the version control revision the harness was
	// built from, with "-dirty" when the checkout had changes; absent
	// when the build does not know it.
	HarnessRevision string         `json:"harness_revision,omitempty"`
	Provider        string         `json:"provider"`
	Model           string         `json:"model"`
	Mode            RunMode        `json:"mode"`
	PermissionMode  PermissionMode `json:"permission_mode"`
	// ConfigHash is the Hash of everything that changes the session's
	// behaviour: the model, the permission mode and rules (allow, ask,
	// deny, disallowed tools, protected paths, fuse threshold), the hooks,
	// the MCP servers, the defenses, every limit and price, whether replies
	// are streamed, the system prompt as sent, and the tool catalog (each
	// tool's name, definition hash, deferred and read-only flags, in
	// order). Two sessions with the same hash ran under the same policy;
	// the order of map entries (hook or MCP environments) does not count.
	ConfigHash string `json:"config_hash"`
	// SystemPromptHash is the Hash of the system prompt as sent, deferred
	// tools list included.
	SystemPromptHash string `json:"system_prompt_hash"`
	// SystemPrompt is the base system prompt the session was given, before
	// the runtime appended the list of deferred tools; a replay gives it to
	// the replayed session. It passes the recorder's redaction like every
	// other field. Optional: older recordings lack it, and a replay then
	// takes it from the first model_request.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Tools is the catalog in the stable order it is sent in.
	Tools []ToolInfo `json:"tools"`
	// ToolsUnknown says the source did not log the tool catalog (a Codex
	// rollout): tools is then empty and says nothing about which tools
	// existed, and a model_request's tool_names neither. Optional.
	ToolsUnknown bool `json:"tools_unknown,omitempty"`
	// Defenses lists the defenses enabled for this session.
	Defenses []DefenseName `json:"defenses"`
	Limits   *Limits       `json:"limits,omitempty"`
	// Workspace is the absolute workspace root, so replays can normalise paths.
	Workspace string `json:"workspace,omitempty"`
	// WorkspaceSnapshot is the BlobRef of the workspace snapshot manifest
	// when it was taken before the session started. The recorder writes
	// session_start first and the snapshot's reference in the
	// workspace_snapshot event that follows, so that a crash during a long
	// snapshot still leaves a valid file.
	WorkspaceSnapshot string `json:"workspace_snapshot,omitempty"`
	// ReplayOf is the session id this session replays, if any.
	ReplayOf string `json:"replay_of,omitempty"`
	// Tags are user-given key/value labels (scenario, git revision, ...).
	Tags map[string]string `json:"tags,omitempty"`
	// ParentSession is the session that started this one as a subagent,
	// and ParentToolUseID the parent's tool_use that did (an Agent or Task
	// call); both absent for a top-level session, ParentToolUseID also
	// when the parent is known but not its call.
	ParentSession   string `json:"parent_session,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
	// OriginFile is the client's own file an imported session was read
	// from (its transcript); the events' origin_line are lines of it.
	// Optional: absent for a session retrace recorded.
	OriginFile string `json:"origin_file,omitempty"`
	// Continues is the session whose conversation this one carries on
	// (retrace run --continue): its history was rebuilt from that
	// session's trajectory, in the same directory, and the prompt it
	// starts with is in a user_prompt event. Optional.
	Continues string `json:"continues,omitempty"`
	// Config is the effective configuration the session ran under, after
	// every layer (defaults, the user's or --config file, the workspace's
	// retrace.yaml, a scenario's config): a JSON object with
	// retrace.yaml's keys, so that a replay starts from exactly it. Secret
	// values (MCP headers, environment variables named like credentials)
	// are replaced by "<redacted>", and the recorder's redaction applies
	// as to every field. Optional: older recordings lack it, and a replay
	// then reads the restored workspace's retrace.yaml.
	Config json.RawMessage `json:"config,omitempty"`
	// ConfigSources says which layer each setting of Config came from:
	// the setting's path as retrace.yaml spells it ("permissions.mode",
	// "permissions.allow[0]", "limits.max_turns") to the layer ("defaults",
	// a file's path, "scenario X"). Optional.
	ConfigSources map[string]string `json:"config_sources,omitempty"`
	// Signature proves to the user who recorded the session that the
	// recording is their own: "hmac-sha256:" and the hex HMAC, with a key
	// kept in that user's configuration directory, over this
	// session_start (Signature empty) and the session id. A replay
	// applies the permission mode and allow rules of a recording whose
	// signature it can check. Optional.
	Signature string `json:"signature,omitempty"`
	// Sandbox says how the session's tool processes were confined
	// (package agent/sandbox). Optional: older recordings lack it.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
}

// SandboxInfo describes a session's sandbox.
type SandboxInfo struct {
	// Mode is what tool processes could write, off, or unavailable.
	Mode SandboxMode `json:"mode"`
	// LandlockABI is the kernel's Landlock ABI version; absent when the
	// sandbox was off or the kernel has none.
	LandlockABI int `json:"landlock_abi,omitempty"`
	// Network is true when tool processes could use the network freely.
	Network bool `json:"network,omitempty"`
	// Limits says how the processes were bounded, e.g. "pids cgroup (1024)".
	Limits string `json:"limits,omitempty"`
	// Reason says why the sandbox was unavailable.
	Reason string `json:"reason,omitempty"`
}

// EventType implements Payload.
func (*SessionStart) EventType() EventType { return TypeSessionStart }

func (p *SessionStart) validate(c *checks) {
	c.nonEmpty("harness_version", p.HarnessVersion)
	c.optionalLabel("harness_revision", p.HarnessRevision)
	c.label("provider", p.Provider)
	c.nonEmpty("model", p.Model)
	checkEnum(c, "mode", p.Mode, runModes)
	checkEnum(c, "permission_mode", p.PermissionMode, permissionModes)
	c.hash("config_hash", p.ConfigHash)
	c.hash("system_prompt_hash", p.SystemPromptHash)
	if p.Tools == nil {
		c.fail("tools", ErrMissingField, "want a list (it may be empty)")
	}
	for i := range p.Tools {
		c.nestedAt("tools", i, p.Tools[i].validate)
	}
	if p.Defenses == nil {
		c.fail("defenses", ErrMissingField, "want a list (it may be empty)")
	}
	for i, d := range p.Defenses {
		if !d.Valid() {
			checkEnum(c, indexed("defenses", i), d, defenseNames)
		}
	}
	if p.Limits != nil {
		c.nonNegative("limits.max_turns", float64(p.Limits.MaxTurns))
		c.nonNegative("limits.token_budget", float64(p.Limits.TokenBudget))
		c.nonNegative("limits.cost_budget_usd", p.Limits.CostBudget)
		c.nonNegative("limits.max_tokens", float64(p.Limits.MaxTokens))
		c.nonNegative("limits.context_tokens", float64(p.Limits.ContextTokens))
		c.nonNegative("limits.context_window", float64(p.Limits.ContextWindow))
		c.nonNegative("limits.compact_threshold", p.Limits.CompactThreshold)
		if p.Limits.Compaction != "" {
			checkEnum(c, "limits.compaction", p.Limits.Compaction, compactionStrategies)
		}
		c.nonNegative("limits.input_per_mtok", p.Limits.InputPerMTok)
		c.nonNegative("limits.output_per_mtok", p.Limits.OutputPerMTok)
		c.nonNegative("limits.cache_read_per_mtok", p.Limits.CacheReadPerMTok)
		c.nonNegative("limits.cache_write_per_mtok", p.Limits.CacheWritePerMTok)
	}
	c.blobRef("workspace_snapshot", p.WorkspaceSnapshot)
	if len(p.Config) > 0 && !isJSONObject(p.Config) {
		c.fail("config", ErrMalformed, "want a JSON object")
	}
	if p.Sandbox != nil {
		checkEnum(c, "sandbox.mode", p.Sandbox.Mode, sandboxModes)
		c.nonNegative("sandbox.landlock_abi", float64(p.Sandbox.LandlockABI))
	}
	for k := range p.Tags {
		c.label("tags key", k)
	}
	if p.ParentToolUseID != "" && p.ParentSession == "" {
		c.fail("parent_tool_use_id", ErrMalformed, "names a call of no session; give parent_session too")
	}
}

// WorkspaceSnapshot records the snapshot of the workspace the session
// starts from, taken after session_start was written and before the first
// model_request. A session_start followed by nothing is a session whose
// process died while it took the snapshot.
type WorkspaceSnapshot struct {
	// Manifest is the BlobRef of the snapshot manifest.
	Manifest string `json:"manifest"`
	// Files is the number of files stored; Bytes their content's size.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Skipped is the number of paths whose content was not stored (too
	// large, unreadable); the manifest names them.
	Skipped    int64   `json:"skipped,omitempty"`
	DurationMs float64 `json:"duration_ms"`
}

// EventType implements Payload.
func (*WorkspaceSnapshot) EventType() EventType { return TypeWorkspaceSnapshot }

func (p *WorkspaceSnapshot) validate(c *checks) {
	c.nonEmpty("manifest", p.Manifest)
	c.blobRef("manifest", p.Manifest)
	c.nonNegative("files", float64(p.Files))
	c.nonNegative("bytes", float64(p.Bytes))
	c.nonNegative("skipped", float64(p.Skipped))
	c.nonNegative("duration_ms", p.DurationMs)
}

// ContentBlock is one block of a message, in the provider-neutral form.
type ContentBlock struct {
	Type BlockType `json:"type"`
	// Text is the text of a text or thinking block.
	Text string `json:"text,omitempty"`
	// ID and Name identify a tool_use block.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Input is a tool_use block's input object.
	Input json.RawMessage `json:"input,omitempty"`
	// PartialInput holds the bytes of a tool_use input that was cut off
	// (max_tokens) and is not valid JSON; Input is then empty.
	PartialInput string `json:"partial_input,omitempty"`
	// ToolUseID, Content and IsError make a tool_result block.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

func (b *ContentBlock) validate(c *checks) {
	checkEnum(c, "type", b.Type, blockTypes)
	switch b.Type {
	case BlockToolUse:
		c.nonEmpty("id", b.ID)
		c.nonEmpty("name", b.Name)
		switch {
		case len(b.Input) == 0 && b.PartialInput == "":
			c.fail("input", ErrMissingField, "a tool_use block needs input (or partial_input when cut off)")
		case len(b.Input) > 0 && !isJSONObject(b.Input):
			c.fail("input", ErrMalformed, "want a JSON object")
		}
	case BlockToolResult:
		c.nonEmpty("tool_use_id", b.ToolUseID)
	}
}

// isJSONObject reports whether raw is one JSON object, as json.Valid
// judges it. A decoded input was checked already, so the fast decoder's
// validator, which only ever accepts valid JSON, answers first, and
// json.Valid has the last word on what it gives up on.
func isJSONObject(raw json.RawMessage) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	if end, ok := validValue(raw, i, 0); ok && skipSpace(raw, end) == len(raw) {
		return true
	}
	return json.Valid(raw)
}

// Message is one message of a model request.
type Message struct {
	Role    Role           `json:"role"`
	Content []ContentBlock `json:"content"`
}

func (m *Message) validate(c *checks) {
	checkEnum(c, "role", m.Role, roles)
	for i := range m.Content {
		c.nestedAt("content", i, m.Content[i].validate)
	}
}

// ModelRequest records one request to the model. It carries hashes of every
// part of the request and the full content of only the messages added since
// the previous request, so a file grows linearly and any two requests can be
// diffed part by part.
type ModelRequest struct {
	// RequestBytes is the size of the request body as sent.
	RequestBytes int64  `json:"request_bytes"`
	SystemHash   string `json:"system_hash"`
	// System is the system prompt, present when its hash differs from the
	// previous request's (so at least in the first request).
	System string `json:"system,omitempty"`
	// ToolsHash is the Hash of the tool definitions in the order sent.
	ToolsHash string   `json:"tools_hash"`
	ToolNames []string `json:"tool_names"`
	// MessagesKept (v2) is how many leading messages of the previous
	// request of the session this request keeps unchanged: all of them
	// while the conversation only grows, fewer after a compaction or a
	// rewrite, 0 for the first request. Absent means 0.
	MessagesKept int `json:"messages_kept,omitempty"`
	// MessageHashes holds the Hash of every message after the kept ones,
	// in order (v2); in v1 it holds the hash of every message of the
	// request. Conversation gives the full list of either.
	MessageHashes []string `json:"message_hashes"`
	// PrefixHash (v2, required there) chains over the hashes of all the
	// request's messages (ChainHash), so a reader verifies the whole
	// prefix, and two requests with equal prefix hashes send the same
	// messages.
	PrefixHash string `json:"prefix_hash,omitempty"`
	// NewMessages are the content of the last len(NewMessages) messages
	// of MessageHashes: the messages added since the previous request.
	NewMessages []Message `json:"new_messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Stream      bool      `json:"stream,omitempty"`
	// PendingSources names the tool sources (MCP servers) still connecting
	// when the request was built: their tools are "not here yet", which is
	// not "they do not exist". Optional; absent when
	// none is pending or the harness does not say.
	PendingSources []string `json:"pending_sources,omitempty"`
	// BatchMs is the wall time from the end of the previous reply to this
	// request, when the harness did not run the tools itself (a recording
	// of a third-party agent): the agent ran the previous reply's tool
	// calls, and did its own work, in that time. It is the batch's time as
	// it is, never split among the calls. Optional.
	BatchMs float64 `json:"batch_ms,omitempty"`
	// OriginLine is the line of session_start's origin_file an imported
	// event comes from. Optional.
	OriginLine int `json:"origin_line,omitempty"`
}

// EventType implements Payload.
func (*ModelRequest) EventType() EventType { return TypeModelRequest }

func (p *ModelRequest) validate(c *checks) {
	c.nonNegative("origin_line", float64(p.OriginLine))
	c.nonNegative("request_bytes", float64(p.RequestBytes))
	c.hash("system_hash", p.SystemHash)
	c.hash("tools_hash", p.ToolsHash)
	if p.ToolNames == nil {
		c.fail("tool_names", ErrMissingField, "want a list (it may be empty)")
	}
	for i, n := range p.ToolNames {
		if !IsToolName(n) {
			c.toolName(indexed("tool_names", i), n)
		}
	}
	if p.MessageHashes == nil {
		c.fail("message_hashes", ErrMissingField, "want a list")
	}
	switch {
	case c.v == 1 && p.PrefixHash != "":
		c.fail("prefix_hash", ErrMalformed, "not a field of v 1 model_request events (v 2 has it)")
	case c.v == 1 && p.MessagesKept != 0:
		c.fail("messages_kept", ErrMalformed, "not a field of v 1 model_request events (v 2 has it)")
	case c.v >= 2 && p.PrefixHash == "":
		c.fail("prefix_hash", ErrMissingField, "required in v 2 model_request events")
	case c.v >= 2:
		c.hash("prefix_hash", p.PrefixHash)
	}
	c.nonNegative("messages_kept", float64(p.MessagesKept))
	for i, h := range p.MessageHashes {
		if !IsHash(h) {
			c.hash(indexed("message_hashes", i), h)
		}
	}
	if len(p.NewMessages) > len(p.MessageHashes) {
		c.fail("new_messages", ErrMalformed, "%d new messages but only %d message hashes", len(p.NewMessages), len(p.MessageHashes))
	}
	for i := range p.NewMessages {
		c.nestedAt("new_messages", i, p.NewMessages[i].validate)
	}
	c.nonNegative("max_tokens", float64(p.MaxTokens))
	c.nonNegative("batch_ms", p.BatchMs)
	for i, n := range p.PendingSources {
		c.nonEmpty(indexed("pending_sources", i), n)
	}
}

// Usage counts tokens. InputTokens excludes the cache reads and writes.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
}

func (u *Usage) validate(c *checks) {
	c.nonNegative("input_tokens", float64(u.InputTokens))
	c.nonNegative("output_tokens", float64(u.OutputTokens))
	c.nonNegative("cache_read_tokens", float64(u.CacheReadTokens))
	c.nonNegative("cache_creation_tokens", float64(u.CacheCreationTokens))
}

// ModelResponse records a model reply exactly as received.
type ModelResponse struct {
	Content []ContentBlock `json:"content"`
	// StopReason is the whitelist-normalised stop reason.
	StopReason StopReason `json:"stop_reason"`
	// StopReasonRaw is the provider's value as received ("" when missing).
	StopReasonRaw string `json:"stop_reason_raw,omitempty"`
	Usage         Usage  `json:"usage"`
	// TTFTMs is the time to the first byte of a streamed reply.
	TTFTMs     float64 `json:"ttft_ms,omitempty"`
	DurationMs float64 `json:"duration_ms"`
	// OriginLine is the line of session_start's origin_file an imported
	// event comes from. Optional.
	OriginLine int `json:"origin_line,omitempty"`
}

// EventType implements Payload.
func (*ModelResponse) EventType() EventType { return TypeModelResponse }

func (p *ModelResponse) validate(c *checks) {
	c.nonNegative("origin_line", float64(p.OriginLine))
	if p.Content == nil {
		c.fail("content", ErrMissingField, "want a list of content blocks (it may be empty)")
	}
	for i := range p.Content {
		c.nestedAt("content", i, p.Content[i].validate)
	}
	checkEnum(c, "stop_reason", p.StopReason, stopReasons)
	c.nested("usage.", p.Usage.validate)
	c.nonNegative("ttft_ms", p.TTFTMs)
	c.nonNegative("duration_ms", p.DurationMs)
}

// ToolUses returns the tool_use blocks of the response, in order.
func (p *ModelResponse) ToolUses() []ContentBlock {
	var out []ContentBlock
	for _, b := range p.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// ModelError records a failed model call attempt.
type ModelError struct {
	ErrorKind  ModelErrorKind `json:"error_kind"`
	StatusCode int            `json:"status_code,omitempty"`
	// Attempt counts the attempts of this request from 1.
	Attempt      int     `json:"attempt"`
	WillRetry    bool    `json:"will_retry,omitempty"`
	RetryAfterMs float64 `json:"retry_after_ms,omitempty"`
	DurationMs   float64 `json:"duration_ms"`
	// Undelivered is set when the client was gone before the failure
	// reached it (it hung up during a stall, or before the error reply):
	// the attempt failed, but the client never saw why. Optional.
	Undelivered bool `json:"undelivered,omitempty"`
	// OriginLine is the line of session_start's origin_file an imported
	// event comes from. Optional.
	OriginLine int `json:"origin_line,omitempty"`
}

// EventType implements Payload.
func (*ModelError) EventType() EventType { return TypeModelError }

func (p *ModelError) validate(c *checks) {
	c.nonNegative("origin_line", float64(p.OriginLine))
	checkEnum(c, "error_kind", p.ErrorKind, modelErrorKinds)
	if p.Attempt < 1 {
		c.fail("attempt", ErrMalformed, "got %d, want a number >= 1", p.Attempt)
	}
	c.nonNegative("retry_after_ms", p.RetryAfterMs)
	c.nonNegative("duration_ms", p.DurationMs)
}

// ToolRef identifies the call an event is about.
type ToolRef struct {
	ToolUseID string `json:"tool_use_id"`
	Tool      string `json:"tool"`
	// Observed says where the event comes from when retrace did not run
	// the call itself: absent for retrace's own runtime, which saw every
	// event happen; ObservedWire when mock serve --record derived it from
	// the tool_use and tool_result on the wire; ObservedTranscript when a
	// third-party client's own transcript states it; ObservedInferred when
	// an importer derived it from what the transcript shows (a tool_call
	// from a tool_use block, an outcome from is_error). Optional.
	Observed Observed `json:"observed,omitempty"`
	// OriginLine is the line of the client's own file (session_start's
	// origin_file) that an imported event comes from, so a finding can
	// point the user at the transcript they know. Optional: absent for
	// events retrace observed itself.
	OriginLine int `json:"origin_line,omitempty"`
}

// Ref returns the call the event is about. Every payload that embeds
// ToolRef has it, so code that groups events by call asks ToolUseIDOf or
// ToolRefOf instead of switching over the payload types.
func (r *ToolRef) Ref() ToolRef { return *r }

// refPtr gives ToolRefOf the embedded ToolRef itself.
func (r *ToolRef) refPtr() *ToolRef { return r }

// ToolRefOf returns the ToolRef a payload about one tool call embeds, to
// read or change, or nil for any other payload.
func ToolRefOf(p Payload) *ToolRef {
	if r, ok := p.(interface{ refPtr() *ToolRef }); ok {
		return r.refPtr()
	}
	return nil
}

// ToolUseIDOf returns the tool_use id of a payload about one tool call (a
// payload that embeds ToolRef), or "" for any other payload.
func ToolUseIDOf(p Payload) string {
	if r := ToolRefOf(p); r != nil {
		return r.ToolUseID
	}
	return ""
}

func (r *ToolRef) validate(c *checks) {
	c.nonNegative("origin_line", float64(r.OriginLine))
	c.nonEmpty("tool_use_id", r.ToolUseID)
	c.nonEmpty("tool", r.Tool)
	if r.Observed != "" {
		checkEnum(c, "observed", r.Observed, observedOrigins)
	}
}

// ToolCall records that the executor took up a tool_use block. Every path
// after it ends in exactly one ToolSuccess or ToolFailure and one ToolEnd.
type ToolCall struct {
	ToolRef
	// Input is the tool input as the model sent it (redacted).
	Input json.RawMessage `json:"input"`
	// Index is the call's position among the response's tool_use blocks.
	Index int `json:"index"`
	// Batch is the index of the partition batch the call ran in.
	Batch           int  `json:"batch"`
	ConcurrencySafe bool `json:"concurrency_safe,omitempty"`
	// StreamOffsetMs is set when the call was taken up while its reply
	// was still streaming (streaming tool execution): the
	// milliseconds from the model_request to the moment the call started
	// — or, for a call whose tool_use was complete but which had not
	// started when the reply failed, to the moment it was abandoned (its
	// tool_failure is then aborted with error_code stream_abandoned).
	// Such a tool_call precedes the model_response that holds its
	// tool_use, or the model_error of a reply that failed; a tool_call
	// without it follows its model_response. Optional.
	StreamOffsetMs *float64 `json:"stream_offset_ms,omitempty" jsonschema:"minimum=0"`
}

// EventType implements Payload.
func (*ToolCall) EventType() EventType { return TypeToolCall }

func (p *ToolCall) validate(c *checks) {
	p.ToolRef.validate(c)
	if len(p.Input) == 0 || !json.Valid(p.Input) {
		c.fail("input", ErrMalformed, "want the tool input as JSON")
	}
	c.nonNegative("index", float64(p.Index))
	c.nonNegative("batch", float64(p.Batch))
	if p.StreamOffsetMs != nil {
		c.nonNegative("stream_offset_ms", *p.StreamOffsetMs)
	}
}

// MaxHookStderr is the most bytes of a hook's standard error a hook_run
// event carries.
const MaxHookStderr = 2048

// HookRun records one run of a configured hook.
type HookRun struct {
	ToolRef
	Phase HookPhase `json:"phase"`
	// Hook is the hook's configured name (a label, never its command).
	Hook         string      `json:"hook"`
	Outcome      HookOutcome `json:"outcome"`
	InputChanged bool        `json:"input_changed,omitempty"`
	DurationMs   float64     `json:"duration_ms"`
	// ExitCode is the hook's exit status (0 to 255) when it ran to its own
	// end; absent when it timed out, was killed by a signal, was stopped
	// with the session or could not start.
	ExitCode *int `json:"exit_code,omitempty" jsonschema:"minimum=0,maximum=255"`
	// Stderr is what the hook wrote on standard error, redacted and then
	// cut to MaxHookStderr bytes (head and tail, with the number of bytes
	// left out between them), so that a broken hook can be debugged from
	// the recording; absent when it wrote nothing there.
	Stderr string `json:"stderr,omitempty" jsonschema:"maxLength=2048"`
}

// EventType implements Payload.
func (*HookRun) EventType() EventType { return TypeHookRun }

func (p *HookRun) validate(c *checks) {
	p.ToolRef.validate(c)
	checkEnum(c, "phase", p.Phase, hookPhases)
	c.label("hook", p.Hook)
	checkEnum(c, "outcome", p.Outcome, hookOutcomes)
	c.nonNegative("duration_ms", p.DurationMs)
	if p.ExitCode != nil && (*p.ExitCode < 0 || *p.ExitCode > 255) {
		c.fail("exit_code", ErrMalformed, "got %d, want an exit status from 0 to 255 (leave it out when the hook did not exit by itself)", *p.ExitCode)
	}
	if len(p.Stderr) > MaxHookStderr {
		c.fail("stderr", ErrMalformed, "got %d bytes, want at most %d (MaxHookStderr)", len(p.Stderr), MaxHookStderr)
	}
}

// PermissionDecision is what the three permission events share.
type PermissionDecision struct {
	ToolRef
	Source PermissionSource `json:"source"`
	Step   ChainStep        `json:"step"`
	// NeededPrompt is true when the decision went through a prompt.
	NeededPrompt bool `json:"needed_prompt,omitempty"`
	// Rule is the configured rule that matched, e.g. "Bash(rm:*)".
	Rule string `json:"rule,omitempty"`
}

func (p *PermissionDecision) validate(c *checks) {
	p.ToolRef.validate(c)
	checkEnum(c, "source", p.Source, permissionSources)
	checkEnum(c, "step", p.Step, chainSteps)
}

// PermissionAllow records that a call was allowed.
type PermissionAllow struct{ PermissionDecision }

// PermissionPrompt records that a call needed a person's confirmation.
type PermissionPrompt struct{ PermissionDecision }

// PermissionDeny records that a call was denied.
type PermissionDeny struct{ PermissionDecision }

// EventType implements Payload.
func (*PermissionAllow) EventType() EventType { return TypePermissionAllow }

// EventType implements Payload.
func (*PermissionPrompt) EventType() EventType { return TypePermissionPrompt }

// EventType implements Payload.
func (*PermissionDeny) EventType() EventType { return TypePermissionDeny }

// ToolSuccess records that a call succeeded.
type ToolSuccess struct{ ToolRef }

// EventType implements Payload.
func (*ToolSuccess) EventType() EventType { return TypeToolSuccess }

// ToolFailure records that a call failed, classified at the call site.
type ToolFailure struct {
	ToolRef
	FailureKind FailureKind `json:"failure_kind"`
	// ErrorCode is a structured code such as ENOENT or exit:2; never text.
	ErrorCode string `json:"error_code,omitempty"`
}

// EventType implements Payload.
func (*ToolFailure) EventType() EventType { return TypeToolFailure }

func (p *ToolFailure) validate(c *checks) {
	p.ToolRef.validate(c)
	checkEnum(c, "failure_kind", p.FailureKind, failureKinds)
	c.optionalLabel("error_code", p.ErrorCode)
}

// ToolEnd closes a call with the tool's own measurements.
type ToolEnd struct {
	ToolRef
	// DurationMs is the tool's own run time, never a batch average.
	DurationMs float64 `json:"duration_ms"`
	// DurationUnknown is true when the source of an imported call does not
	// tell its own run time; DurationMs is then 0 and is no measurement,
	// since splitting a batch's wall time would invent one.
	// Optional.
	DurationUnknown bool `json:"duration_unknown,omitempty"`
	// NotRun is true when the tool's code never started: the call was
	// refused (permission_denied, hook_blocked, invalid_input, not_found)
	// or aborted before it began. DurationMs is then 0 and is no
	// measurement, so a call that did not run is never a latency sample.
	// A reader of a file without the field (written before it) takes the
	// failure kind's word (FailureKind.NeverRuns) and reads an aborted
	// call with a duration_ms of 0 as not run (see Ran). Optional.
	NotRun      bool  `json:"not_run,omitempty"`
	OutputBytes int64 `json:"output_bytes"`
	Truncated   bool  `json:"truncated,omitempty"`
	// Spill is the BlobRef of the full output when it was truncated.
	Spill string `json:"spill,omitempty"`
	// Snapshot is the BlobRef of the manifest of the files the call was
	// about to change, saved before it ran.
	Snapshot string `json:"snapshot,omitempty"`
	// PID is the process id of the process the call started (bash's
	// shell, whose $$ it is), so that a replay maps the recorded id to the
	// replayed one exactly. Optional: 0 for a call that started none.
	PID int `json:"pid,omitempty"`
}

// EventType implements Payload.
func (*ToolEnd) EventType() EventType { return TypeToolEnd }

func (p *ToolEnd) validate(c *checks) {
	p.ToolRef.validate(c)
	c.nonNegative("duration_ms", p.DurationMs)
	if p.NotRun && p.DurationMs != 0 {
		c.fail("duration_ms", ErrMalformed, "got %g with not_run; a call that did not run has no duration (0)", p.DurationMs)
	}
	if p.NotRun && p.DurationUnknown {
		c.fail("duration_unknown", ErrMalformed, "set with not_run; a call that did not run has no duration to be unknown")
	}
	c.nonNegative("output_bytes", float64(p.OutputBytes))
	c.blobRef("spill", p.Spill)
	c.blobRef("snapshot", p.Snapshot)
	c.nonNegative("pid", float64(p.PID))
}

// ToolResult records the tool_result block the model receives for a call.
type ToolResult struct {
	ToolRef
	// Text is the model-side content.
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
	// Display is the user-side display mode; it never changes Text.
	Display DisplayMode `json:"display"`
}

// EventType implements Payload.
func (*ToolResult) EventType() EventType { return TypeToolResult }

func (p *ToolResult) validate(c *checks) {
	p.ToolRef.validate(c)
	checkEnum(c, "display", p.Display, displayModes)
}

// DefenseTrigger records a defense acting, at the point where it acts, not
// where it is merely evaluated.
type DefenseTrigger struct {
	Defense DefenseName   `json:"defense"`
	Action  DefenseAction `json:"action"`
	// ToolUseID is the call the defense acted on, if any.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Count is how many times this defense has acted in the session, from 1.
	Count    int               `json:"count,omitempty"`
	Evidence map[string]string `json:"evidence,omitempty"`
}

// EventType implements Payload.
func (*DefenseTrigger) EventType() EventType { return TypeDefenseTrigger }

func (p *DefenseTrigger) validate(c *checks) {
	checkEnum(c, "defense", p.Defense, defenseNames)
	checkEnum(c, "action", p.Action, defenseActions)
	c.nonNegative("count", float64(p.Count))
	for k := range p.Evidence {
		c.label("evidence key", k)
	}
}

// Reminder records a harness message injected into the conversation.
type Reminder struct {
	// Kind is a label naming the reminder, e.g. repeated_readonly.
	Kind     string `json:"kind"`
	DedupKey string `json:"dedup_key,omitempty"`
	Role     Role   `json:"role"`
	Text     string `json:"text"`
}

// EventType implements Payload.
func (*Reminder) EventType() EventType { return TypeReminder }

func (p *Reminder) validate(c *checks) {
	c.label("kind", p.Kind)
	checkEnum(c, "role", p.Role, roles)
}

// Compaction records the loop relieving context pressure: the oldest tool
// outputs dropped (drop), or the older turns replaced by a summary the
// model wrote in a request of its own (summarize).
type Compaction struct {
	Strategy       CompactionStrategy `json:"strategy"`
	MessagesBefore int                `json:"messages_before"`
	MessagesAfter  int                `json:"messages_after"`
	// TokensBefore is the context's size when compaction started, measured
	// as MeasuredBy says. TokensAfter is TokensBefore less the estimated
	// size (bytes/4) of what was removed, since no reply has measured the
	// shorter context yet; the next model_response's usage does.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
	// MeasuredBy says whether TokensBefore is the usage the API reported
	// for the last reply (plus an estimate of what was added since) or the
	// bytes/4 estimate of the whole history, used when no reply reported
	// usage. Optional: older recordings always estimated.
	MeasuredBy TokenMeasure `json:"measured_by,omitempty"`
	// ThresholdTokens is the size at which the loop compacts, and
	// ContextWindow the model's context window it was derived from, with
	// WindowSource saying where the window came from. Optional.
	ThresholdTokens int64        `json:"threshold_tokens,omitempty"`
	ContextWindow   int64        `json:"context_window,omitempty"`
	WindowSource    WindowSource `json:"window_source,omitempty"`
	// ResultsDropped counts the tool results whose content was replaced.
	ResultsDropped int `json:"results_dropped,omitempty"`
	// SummaryTurn is the turn of the model request that asked for the
	// summary, for the summarize strategy: that request and its response
	// are recorded like any other, just before this event.
	SummaryTurn int `json:"summary_turn,omitempty"`
}

// EventType implements Payload.
func (*Compaction) EventType() EventType { return TypeCompaction }

func (p *Compaction) validate(c *checks) {
	checkEnum(c, "strategy", p.Strategy, compactionStrategies)
	c.nonNegative("messages_before", float64(p.MessagesBefore))
	c.nonNegative("messages_after", float64(p.MessagesAfter))
	c.nonNegative("tokens_before", float64(p.TokensBefore))
	c.nonNegative("tokens_after", float64(p.TokensAfter))
	if p.MeasuredBy != "" {
		checkEnum(c, "measured_by", p.MeasuredBy, tokenMeasures)
	}
	if p.WindowSource != "" {
		checkEnum(c, "window_source", p.WindowSource, windowSources)
	}
	c.nonNegative("threshold_tokens", float64(p.ThresholdTokens))
	c.nonNegative("context_window", float64(p.ContextWindow))
	c.nonNegative("results_dropped", float64(p.ResultsDropped))
	c.nonNegative("summary_turn", float64(p.SummaryTurn))
}

// UserPrompt records a person's prompt entering a session that already
// has a conversation: a follow-up typed in an interactive session (retrace
// run -i), or the prompt a continued session (retrace run --continue)
// starts with. The first prompt of a session that starts fresh is the
// first user message of its first model_request, as it always was, and
// has no user_prompt. The prompt reaches the model in the next request.
type UserPrompt struct {
	// Text is the prompt as the person gave it.
	Text string `json:"text"`
	// PromptIndex is the prompt's number in this file's session: 1 for
	// the first prompt after the session's first, and so on; 0 for the
	// prompt a continued session starts with.
	PromptIndex int `json:"prompt_index"`
}

// EventType implements Payload.
func (*UserPrompt) EventType() EventType { return TypeUserPrompt }

func (p *UserPrompt) validate(c *checks) {
	c.nonEmpty("text", p.Text)
	c.nonNegative("prompt_index", float64(p.PromptIndex))
}

// SessionEnd closes a session with its attributed end reason and totals.
type SessionEnd struct {
	Reason EndReason `json:"reason"`
	Turns  int       `json:"turns"`
	// Usage is the sum over the session's model responses.
	Usage        Usage   `json:"usage"`
	ToolCalls    int     `json:"tool_calls"`
	ToolFailures int     `json:"tool_failures"`
	DurationMs   float64 `json:"duration_ms"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	// ErrorCode is a structured code when Reason is error.
	ErrorCode string `json:"error_code,omitempty"`
	// RecorderErrors counts the recorder's problems so far that may have lost
	// events (encode, write and sync failures, events after close).
	RecorderErrors int `json:"recorder_errors,omitempty"`
}

// EventType implements Payload.
func (*SessionEnd) EventType() EventType { return TypeSessionEnd }

func (p *SessionEnd) validate(c *checks) {
	checkEnum(c, "reason", p.Reason, endReasons)
	c.nonNegative("turns", float64(p.Turns))
	c.nested("usage.", p.Usage.validate)
	c.nonNegative("tool_calls", float64(p.ToolCalls))
	c.nonNegative("tool_failures", float64(p.ToolFailures))
	c.nonNegative("duration_ms", p.DurationMs)
	c.nonNegative("cost_usd", p.CostUSD)
	c.optionalLabel("error_code", p.ErrorCode)
	c.nonNegative("recorder_errors", float64(p.RecorderErrors))
}

// newPayload returns a zero payload for t, or nil when t is unknown.
func newPayload(t EventType) Payload {
	switch t {
	case TypeSessionStart:
		return &SessionStart{}
	case TypeWorkspaceSnapshot:
		return &WorkspaceSnapshot{}
	case TypeModelRequest:
		return &ModelRequest{}
	case TypeModelResponse:
		return &ModelResponse{}
	case TypeModelError:
		return &ModelError{}
	case TypeToolCall:
		return &ToolCall{}
	case TypeHookRun:
		return &HookRun{}
	case TypePermissionAllow:
		return &PermissionAllow{}
	case TypePermissionPrompt:
		return &PermissionPrompt{}
	case TypePermissionDeny:
		return &PermissionDeny{}
	case TypeToolSuccess:
		return &ToolSuccess{}
	case TypeToolFailure:
		return &ToolFailure{}
	case TypeToolEnd:
		return &ToolEnd{}
	case TypeToolResult:
		return &ToolResult{}
	case TypeDefenseTrigger:
		return &DefenseTrigger{}
	case TypeReminder:
		return &Reminder{}
	case TypeCompaction:
		return &Compaction{}
	case TypeUserPrompt:
		return &UserPrompt{}
	case TypeSessionEnd:
		return &SessionEnd{}
	case TypeMCPServer:
		return &MCPServer{}
	}
	return nil
}
