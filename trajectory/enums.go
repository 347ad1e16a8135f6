package trajectory

// closedSet is the list of values a closed-set type may take. Each closed set
// in the contract is a string type with a package-level closedSet and a
// Valid method, so that the reader, the recorder and the generated JSON
// Schema all agree on one list.
type closedSet[T ~string] []T

func (s closedSet[T]) has(v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (s closedSet[T]) strings() []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// EventType names the kind of a trajectory event; it selects the payload.
type EventType string

// The event types of trajectory v1.
const (
	TypeSessionStart      EventType = "session_start"
	TypeWorkspaceSnapshot EventType = "workspace_snapshot"
	TypeModelRequest      EventType = "model_request"
	TypeModelResponse     EventType = "model_response"
	TypeModelError        EventType = "model_error"
	TypeToolCall          EventType = "tool_call"
	TypeHookRun           EventType = "hook_run"
	TypePermissionAllow   EventType = "permission_allow"
	TypePermissionPrompt  EventType = "permission_prompt"
	TypePermissionDeny    EventType = "permission_deny"
	TypeToolSuccess       EventType = "tool_success"
	TypeToolFailure       EventType = "tool_failure"
	TypeToolEnd           EventType = "tool_end"
	TypeToolResult        EventType = "tool_result"
	TypeDefenseTrigger    EventType = "defense_trigger"
	TypeReminder          EventType = "reminder"
	TypeCompaction        EventType = "compaction"
	TypeUserPrompt        EventType = "user_prompt"
	TypeSessionEnd        EventType = "session_end"
)

var eventTypes = closedSet[EventType]{
	TypeSessionStart, TypeWorkspaceSnapshot, TypeModelRequest, TypeModelResponse, TypeModelError,
	TypeToolCall, TypeHookRun, TypePermissionAllow, TypePermissionPrompt,
	TypePermissionDeny, TypeToolSuccess, TypeToolFailure, TypeToolEnd,
	TypeToolResult, TypeDefenseTrigger, TypeReminder, TypeCompaction,
	TypeUserPrompt, TypeSessionEnd, TypeMCPServer,
}

// Valid reports whether t is one of the contract's event types.
func (t EventType) Valid() bool { return eventTypes.has(t) }

// EventTypes returns every event type, in the order of the contract.
func EventTypes() []EventType { return append([]EventType(nil), eventTypes...) }

// FailureKind classifies a tool failure. It is given at the call site that
// knows why the call failed, never derived from message text.
type FailureKind string

// The failure kinds. ToolError (the tool ran and reported failure, e.g. a
// test run that failed) is deliberately apart from Exception (our bug).
const (
	FailureNotFound         FailureKind = "not_found"
	FailureHookBlocked      FailureKind = "hook_blocked"
	FailureInvalidInput     FailureKind = "invalid_input"
	FailurePermissionDenied FailureKind = "permission_denied"
	FailureAborted          FailureKind = "aborted"
	FailureTimeout          FailureKind = "timeout"
	FailureException        FailureKind = "exception"
	FailureToolError        FailureKind = "tool_error"
	// FailureUnknown: the call's outcome could not be classified from what
	// was observed (a tool result on a wire format with no error flag, in a
	// wording no classifier knows). It is recorded as a failure so that it
	// is never counted as a success; error_code is absent.
	FailureUnknown FailureKind = "unknown"
)

var failureKinds = closedSet[FailureKind]{
	FailureNotFound, FailureHookBlocked, FailureInvalidInput, FailurePermissionDenied,
	FailureAborted, FailureTimeout, FailureException, FailureToolError, FailureUnknown,
}

// Valid reports whether k is a known failure kind.
func (k FailureKind) Valid() bool { return failureKinds.has(k) }

// NeverRuns reports whether a failure of kind k stops a call before the
// tool's code starts: not_found, hook_blocked, invalid_input and
// permission_denied are decided before stage 7 of the executor. A
// tool_error, timeout or exception happens while the tool runs; an
// aborted call may have started or not, which its tool_end's not_run
// says (see Ran).
func (k FailureKind) NeverRuns() bool {
	switch k {
	case FailureNotFound, FailureHookBlocked, FailureInvalidInput, FailurePermissionDenied:
		return true
	}
	return false
}

// StoppedBeforeStart reports whether a failure of kind with error_code
// code was decided before the tool's code started: a kind that NeverRuns,
// except a permission_denied with code ErrorCodeSandbox, which the kernel
// sandbox gave a command while it ran.
func StoppedBeforeStart(kind FailureKind, code string) bool {
	return kind.NeverRuns() && !(kind == FailurePermissionDenied && code == ErrorCodeSandbox)
}

// Ran reports whether a call's tool code started, from its failure kind
// (kind "" for a success), its error_code and its tool_end: the contract's one
// definition of "ran", which the metrics column tool_calls.ran computes
// the same way (metrics' glossary). A success ran; a failure of a kind
// that NeverRuns did not; a tool_end marked not_run did not; and, for
// files written before not_run existed, an aborted call whose measured
// duration is exactly 0 did not (the runtime wrote 0 for a call it
// abandoned before starting it; a call that ran measures at least a
// microsecond).
func Ran(kind FailureKind, code string, end *ToolEnd) bool {
	if StoppedBeforeStart(kind, code) {
		return false
	}
	var e ToolEnd
	if end != nil {
		e = *end
	}
	return !e.NotRun && (kind != FailureAborted || e.DurationMs != 0 || e.DurationUnknown)
}

// PermissionSource says which part of the permission system decided.
type PermissionSource string

// The permission sources.
const (
	SourceRule           PermissionSource = "rule"
	SourceMode           PermissionSource = "mode"
	SourceReadOnly       PermissionSource = "read_only"
	SourceHook           PermissionSource = "hook"
	SourceSafety         PermissionSource = "safety"
	SourceSessionMemory  PermissionSource = "session_memory"
	SourceUser           PermissionSource = "user"
	SourceNonInteractive PermissionSource = "non_interactive"
	SourceFuse           PermissionSource = "fuse"
	// SourceSandbox is the kernel sandbox refusing what a tool's process
	// tried (package agent/sandbox): recorded after the call ran, with
	// step sandbox, because the refusal happens while it runs.
	SourceSandbox PermissionSource = "sandbox"
)

var permissionSources = closedSet[PermissionSource]{
	SourceRule, SourceMode, SourceReadOnly, SourceHook, SourceSafety,
	SourceSessionMemory, SourceUser, SourceNonInteractive, SourceFuse, SourceSandbox,
}

// Valid reports whether s is a known permission source.
func (s PermissionSource) Valid() bool { return permissionSources.has(s) }

// ChainStep names the step of the permission chain at which a
// decision was reached. The order of the constants is the order of the chain.
type ChainStep string

// The permission chain steps.
const (
	StepHook             ChainStep = "hook"
	StepSessionMemory    ChainStep = "session_memory"
	StepDenyRule         ChainStep = "deny_rule"
	StepDangerousCommand ChainStep = "dangerous_command"
	StepDisallowedTool   ChainStep = "disallowed_tool"
	StepPathValidation   ChainStep = "path_validation"
	StepAskRule          ChainStep = "ask_rule"
	StepToolCheck        ChainStep = "tool_check"
	StepProtectedPath    ChainStep = "protected_path"
	StepBypassMode       ChainStep = "bypass_mode"
	StepAllowRule        ChainStep = "allow_rule"
	StepPlanMode         ChainStep = "plan_mode"
	StepReadOnly         ChainStep = "read_only"
	StepAcceptEdits      ChainStep = "accept_edits"
	StepDefault          ChainStep = "default"
	StepFuse             ChainStep = "fuse"
	// StepSandbox is not a step of the chain: the sandbox refused the
	// running process after the chain allowed the call.
	StepSandbox ChainStep = "sandbox"
)

var chainSteps = closedSet[ChainStep]{
	StepHook, StepSessionMemory, StepDenyRule, StepDangerousCommand, StepDisallowedTool,
	StepPathValidation, StepAskRule, StepToolCheck, StepProtectedPath, StepBypassMode,
	StepAllowRule, StepPlanMode, StepReadOnly, StepAcceptEdits, StepDefault, StepFuse, StepSandbox,
}

// SandboxMode is what the sandbox let a session's tool processes do.
type SandboxMode string

// The sandbox modes.
const (
	// SandboxWorkspaceWrite: write only the workspace and a private
	// temporary directory; read all but the secret paths.
	SandboxWorkspaceWrite SandboxMode = "workspace-write"
	// SandboxReadOnly: write only the private temporary directory.
	SandboxReadOnly SandboxMode = "read-only"
	// SandboxOff: no sandbox, by an explicit trusted choice.
	SandboxOff SandboxMode = "off"
	// SandboxUnavailable: the kernel could not sandbox, so no tool
	// process ran.
	SandboxUnavailable SandboxMode = "unavailable"
)

var sandboxModes = closedSet[SandboxMode]{SandboxWorkspaceWrite, SandboxReadOnly, SandboxOff, SandboxUnavailable}

// Valid reports whether m is a known sandbox mode.
func (m SandboxMode) Valid() bool { return sandboxModes.has(m) }

// Valid reports whether s is a known chain step.
func (s ChainStep) Valid() bool { return chainSteps.has(s) }

// DefenseName names an in-loop or executor defense.
type DefenseName string

// The defenses.
const (
	DefenseEmptyInputRetry    DefenseName = "empty_input_retry"
	DefenseEndTurnFallthrough DefenseName = "end_turn_fallthrough"
	DefenseTruncatedToolUse   DefenseName = "truncated_tool_use"
	DefenseRepeatedReadOnly   DefenseName = "repeated_readonly"
	DefenseLowYieldSpin       DefenseName = "low_yield_spin"
	DefenseLoopDetection      DefenseName = "loop_detection"
	DefenseDenialFuse         DefenseName = "denial_fuse"
	DefenseReminderCap        DefenseName = "reminder_cap"
)

var defenseNames = closedSet[DefenseName]{
	DefenseEmptyInputRetry, DefenseEndTurnFallthrough, DefenseTruncatedToolUse,
	DefenseRepeatedReadOnly, DefenseLowYieldSpin, DefenseLoopDetection,
	DefenseDenialFuse, DefenseReminderCap,
}

// Valid reports whether d is a known defense.
func (d DefenseName) Valid() bool { return defenseNames.has(d) }

// DefenseAction is what a defense did where it acted.
type DefenseAction string

// The defense actions.
const (
	ActionRetry             DefenseAction = "retry"
	ActionExecute           DefenseAction = "execute"
	ActionSkip              DefenseAction = "skip"
	ActionRemind            DefenseAction = "remind"
	ActionStop              DefenseAction = "stop"
	ActionContinue          DefenseAction = "continue"
	ActionNeedsConfirmation DefenseAction = "needs_confirmation"
	ActionSuppress          DefenseAction = "suppress"
)

var defenseActions = closedSet[DefenseAction]{
	ActionRetry, ActionExecute, ActionSkip, ActionRemind, ActionStop,
	ActionContinue, ActionNeedsConfirmation, ActionSuppress,
}

// Valid reports whether a is a known defense action.
func (a DefenseAction) Valid() bool { return defenseActions.has(a) }

// StopReason is a model stop reason normalised by whitelist:
// anything not recognised is StopUnknown and a missing or null one is
// StopMissing, and neither is ever treated as "done".
type StopReason string

// The normalised stop reasons.
const (
	StopToolUse       StopReason = "tool_use"
	StopEndTurn       StopReason = "end_turn"
	StopMaxTokens     StopReason = "max_tokens"
	StopStopSequence  StopReason = "stop_sequence"
	StopRefusal       StopReason = "refusal"
	StopContentFilter StopReason = "content_filter"
	StopUnknown       StopReason = "unknown"
	StopMissing       StopReason = "missing"
)

var stopReasons = closedSet[StopReason]{
	StopToolUse, StopEndTurn, StopMaxTokens, StopStopSequence, StopRefusal,
	StopContentFilter, StopUnknown, StopMissing,
}

// Valid reports whether r is a known normalised stop reason.
func (r StopReason) Valid() bool { return stopReasons.has(r) }

// EndReason says why a session ended, attributed by priority:
// explicit > abort > max_turns > error.
type EndReason string

// The end reasons.
const (
	EndTurn         EndReason = "end_turn"
	EndStopSequence EndReason = "stop_sequence"
	EndMaxTurns     EndReason = "max_turns"
	EndMaxTokens    EndReason = "max_tokens"
	EndTokenBudget  EndReason = "token_budget"
	EndCostBudget   EndReason = "cost_budget"
	EndRefused      EndReason = "refused"
	EndStuck        EndReason = "stuck"
	EndAborted      EndReason = "aborted"
	EndError        EndReason = "error"
	// EndRecordFailed: the recorder could not write (a full disk, an I/O
	// error, a removed run directory), so the runtime stopped before the
	// next effect rather than run it unrecorded. Such a session_end is in
	// the file only when the recorder could write it after all.
	EndRecordFailed EndReason = "record_failed"
)

var endReasons = closedSet[EndReason]{
	EndTurn, EndStopSequence, EndMaxTurns, EndMaxTokens, EndTokenBudget,
	EndCostBudget, EndRefused, EndStuck, EndAborted, EndError, EndRecordFailed,
}

// Valid reports whether r is a known end reason.
func (r EndReason) Valid() bool { return endReasons.has(r) }

// DisplayMode is how a tool result is shown to the user; it never changes
// what the model receives.
type DisplayMode string

// The display modes.
const (
	DisplayFull    DisplayMode = "full"
	DisplaySummary DisplayMode = "summary"
	DisplayHidden  DisplayMode = "hidden"
)

var displayModes = closedSet[DisplayMode]{DisplayFull, DisplaySummary, DisplayHidden}

// Valid reports whether m is a known display mode.
func (m DisplayMode) Valid() bool { return displayModes.has(m) }

// RunMode says whether a person can answer permission prompts.
type RunMode string

// The run modes.
const (
	ModeInteractive RunMode = "interactive"
	ModeHeadless    RunMode = "headless"
	ModeReplay      RunMode = "replay"
)

var runModes = closedSet[RunMode]{ModeInteractive, ModeHeadless, ModeReplay}

// Valid reports whether m is a known run mode.
func (m RunMode) Valid() bool { return runModes.has(m) }

// PermissionMode is the session-wide permission posture.
type PermissionMode string

// The permission modes.
const (
	PermDefault     PermissionMode = "default"
	PermPlan        PermissionMode = "plan"
	PermAcceptEdits PermissionMode = "accept_edits"
	PermBypass      PermissionMode = "bypass"
)

var permissionModes = closedSet[PermissionMode]{PermDefault, PermPlan, PermAcceptEdits, PermBypass}

// Valid reports whether m is a known permission mode.
func (m PermissionMode) Valid() bool { return permissionModes.has(m) }

// ToolSource says where a tool comes from.
type ToolSource string

// The tool sources.
const (
	ToolBuiltin ToolSource = "builtin"
	ToolMCP     ToolSource = "mcp"
)

var toolSources = closedSet[ToolSource]{ToolBuiltin, ToolMCP}

// Valid reports whether s is a known tool source.
func (s ToolSource) Valid() bool { return toolSources.has(s) }

// HookPhase is when a hook runs relative to the tool.
type HookPhase string

// The hook phases.
const (
	HookPre  HookPhase = "pre"
	HookPost HookPhase = "post"
)

var hookPhases = closedSet[HookPhase]{HookPre, HookPost}

// Valid reports whether p is a known hook phase.
func (p HookPhase) Valid() bool { return hookPhases.has(p) }

// HookOutcome is what a hook run decided. Error and Timeout mean the hook
// itself failed; the call then proceeds as if the hook had said continue.
type HookOutcome string

// The hook outcomes.
const (
	HookContinue HookOutcome = "continue"
	HookBlock    HookOutcome = "block"
	HookModified HookOutcome = "modified"
	HookError    HookOutcome = "error"
	HookTimeout  HookOutcome = "timeout"
)

var hookOutcomes = closedSet[HookOutcome]{HookContinue, HookBlock, HookModified, HookError, HookTimeout}

// Valid reports whether o is a known hook outcome.
func (o HookOutcome) Valid() bool { return hookOutcomes.has(o) }

// Role is the author of a message sent to the model.
type Role string

// The roles. System text is not a message: it travels as the request's system.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

var roles = closedSet[Role]{RoleUser, RoleAssistant}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return roles.has(r) }

// BlockType is the type of a content block in a message.
type BlockType string

// The content block types.
const (
	BlockText       BlockType = "text"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	BlockThinking   BlockType = "thinking"
)

var blockTypes = closedSet[BlockType]{BlockText, BlockToolUse, BlockToolResult, BlockThinking}

// Valid reports whether t is a known block type.
func (t BlockType) Valid() bool { return blockTypes.has(t) }

// ModelErrorKind classifies a failed model call, from status codes and typed
// transport errors, never from message text.
type ModelErrorKind string

// The model error kinds.
const (
	ModelRateLimited      ModelErrorKind = "rate_limited"
	ModelOverloaded       ModelErrorKind = "overloaded"
	ModelServerError      ModelErrorKind = "server_error"
	ModelBadRequest       ModelErrorKind = "bad_request"
	ModelAuth             ModelErrorKind = "auth"
	ModelFirstByteTimeout ModelErrorKind = "first_byte_timeout"
	ModelIdleTimeout      ModelErrorKind = "idle_timeout"
	ModelInvalidResponse  ModelErrorKind = "invalid_response"
	ModelConnection       ModelErrorKind = "connection"
	ModelAborted          ModelErrorKind = "aborted"
	ModelReplayMiss       ModelErrorKind = "replay_miss"
)

var modelErrorKinds = closedSet[ModelErrorKind]{
	ModelRateLimited, ModelOverloaded, ModelServerError, ModelBadRequest, ModelAuth,
	ModelFirstByteTimeout, ModelIdleTimeout, ModelInvalidResponse, ModelConnection,
	ModelAborted, ModelReplayMiss,
}

// Valid reports whether k is a known model error kind.
func (k ModelErrorKind) Valid() bool { return modelErrorKinds.has(k) }

// CompactionStrategy is how the loop relieved context pressure.
type CompactionStrategy string

// The compaction strategies.
const (
	CompactDrop      CompactionStrategy = "drop"
	CompactSummarize CompactionStrategy = "summarize"
)

var compactionStrategies = closedSet[CompactionStrategy]{CompactDrop, CompactSummarize}

// Valid reports whether s is a known compaction strategy.
func (s CompactionStrategy) Valid() bool { return compactionStrategies.has(s) }

// TokenMeasure says how a context size was measured.
type TokenMeasure string

// The token measures.
const (
	// MeasuredUsage: the input, cache and output tokens the API reported
	// for the last reply, plus the bytes/4 estimate of the messages added
	// after it (tool results the model has not seen yet).
	MeasuredUsage TokenMeasure = "usage"
	// MeasuredEstimate: the bytes/4 estimate of the whole history, when no
	// reply reported usage (the first request, a provider without usage).
	MeasuredEstimate TokenMeasure = "estimate"
)

var tokenMeasures = closedSet[TokenMeasure]{MeasuredUsage, MeasuredEstimate}

// Valid reports whether m is a known token measure.
func (m TokenMeasure) Valid() bool { return tokenMeasures.has(m) }

// WindowSource says where a model's context window came from.
type WindowSource string

// The window sources.
const (
	// WindowModelTable: the built-in model table (agent.Models) knows the model.
	WindowModelTable WindowSource = "model_table"
	// WindowConfig: the configuration gave it (limits.context_window or
	// limits.models).
	WindowConfig WindowSource = "config"
	// WindowDefault: the model is unknown and nothing configured it; the
	// runtime's default window was assumed, not known.
	WindowDefault WindowSource = "default"
)

var windowSources = closedSet[WindowSource]{WindowModelTable, WindowConfig, WindowDefault}

// Valid reports whether s is a known window source.
func (s WindowSource) Valid() bool { return windowSources.has(s) }

// Observed says where an event about a tool call comes from when retrace
// did not run the call itself (ToolRef.Observed). Absent means retrace's
// own runtime ran the call and saw every event happen.
type Observed string

// The origins of observed events.
const (
	// ObservedWire: derived from the model traffic of a third-party agent
	// (retrace mock serve --record). A call is known from its tool_use and
	// the tool_result the agent sent back: the call, its outcome (from
	// is_error) and its output are on the wire; its own run time is not.
	ObservedWire Observed = "wire"
	// ObservedTranscript: the client's own transcript states the event.
	ObservedTranscript Observed = "transcript"
	// ObservedInferred: an importer derived the event from what the
	// transcript shows; the client wrote no such record.
	ObservedInferred Observed = "inferred"
)

var observedOrigins = closedSet[Observed]{ObservedWire, ObservedTranscript, ObservedInferred}

// Valid reports whether o is a known origin.
func (o Observed) Valid() bool { return observedOrigins.has(o) }
