package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// DefaultMaxConcurrent is how many safe calls run at once.
const DefaultMaxConcurrent = 10

// DefaultTimeout bounds one call when the tool has no timeout of its own.
const DefaultTimeout = 10 * time.Minute

// BlobStore keeps spilled outputs and snapshots; the recorder's Blobs is one.
type BlobStore interface {
	// Put stores content, redacted, and returns its trajectory.BlobRef
	// and a path the read tool can read it back from.
	Put(content []byte) (ref, path string, err error)
	// Redact returns content with its secrets replaced, as Put stores
	// it; the executor redacts what it is about to cut short with it.
	Redact(content []byte) []byte
	// Dir is the directory the blobs are in.
	Dir() string
}

// Prompt is a question to a person: may this call run?
type Prompt struct {
	ToolUseID string
	Tool      string
	Input     json.RawMessage
	// Reason says why the permission chain asks.
	Reason string
}

// Prompter asks a person to confirm a call. A nil Prompter means the
// session is headless: every ask becomes a deny.
type Prompter interface {
	Confirm(ctx context.Context, p Prompt) (bool, error)
}

// Config wires an Executor to the session's parts.
type Config struct {
	// Env is the session state the tools run in; it holds the registry.
	Env *tools.Env
	// Permission is the permission chain. Required.
	Permission *permission.Checker
	// Hooks runs PreToolUse and PostToolUse hooks; nil means none.
	Hooks *hooks.Runner
	// Sink receives the events. Required.
	Sink trajectory.Sink
	// Blobs stores spilled outputs and snapshots. Required.
	Blobs BlobStore
	// Prompter asks a person; nil means headless.
	Prompter Prompter
	// SessionID is passed to hooks.
	SessionID string
	// MaxConcurrent bounds parallel calls; 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// RecordErr reports whether the events emitted so far are recorded:
	// nil while they are, the recorder's error (recorder.Recorder.Err)
	// from the first failure to write on. It is asked before each effect
	// of a call (its PreToolUse hooks, the tool, its PostToolUse hooks);
	// once it is not nil, no effect starts: the call ends as aborted with
	// error code RecordFailedCode, so that nothing runs unrecorded. Nil
	// means the sink cannot fail.
	RecordErr func() error
	// SchemaSent reports whether a tool's schema was in the request that
	// produced the calls. When it was not, an input validation error gets
	// a hint to load the tool first. Nil means always sent.
	SchemaSent func(tool string) bool
}

// Executor runs tool calls. One Executor serves one session; Execute is
// called once per assistant turn and must not be called concurrently.
type Executor struct {
	cfg     Config
	reg     *tools.Registry
	schemas *schemaCache
	// fuseTrips counts the denial fuse's triggers in the session, for
	// their Count; denials of parallel calls may trip it at once.
	fuseTrips atomic.Int32
}

// New checks cfg and returns an Executor.
func New(cfg Config) (*Executor, error) {
	var missing []error
	if cfg.Env == nil {
		missing = append(missing, errors.New("Env is required"))
	}
	if cfg.Permission == nil {
		missing = append(missing, errors.New("Permission is required"))
	}
	if cfg.Sink == nil {
		missing = append(missing, errors.New("Sink is required"))
	}
	if cfg.Blobs == nil {
		missing = append(missing, errors.New("Blobs is required"))
	}
	if err := errors.Join(missing...); err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	// A truncation notice sends the model to read the spilled output; that
	// read must not need a confirmation a headless session cannot give.
	cfg.Permission.AllowReads(cfg.Blobs.Dir())
	return &Executor{cfg: cfg, reg: cfg.Env.Registry(), schemas: newSchemaCache()}, nil
}

// errSiblingFailed is the cancellation cause of bash calls skipped or
// stopped because an earlier bash call of the turn failed.
var errSiblingFailed = errors.New("an earlier bash call of this turn failed")

// turn is the state of one Execute call.
type turn struct {
	ex     *Executor
	number int
	ctx    context.Context // the caller's: cancelled on user abort
	calls  []*call

	// streamLock is what a streamed turn's calls share as their
	// exclusive lock (see call.exclusive).
	streamLock sync.RWMutex

	mu         sync.Mutex
	bashFailed bool
	bashCancel map[*call]context.CancelCauseFunc
}

// batch is a run of calls that execute together: several concurrency-safe
// calls in parallel, or one call alone.
type batch struct {
	safe  bool
	calls []*call
}

// Execute runs the tool_use blocks of one assistant turn and returns one
// tool_result block per tool_use, in the blocks' order. It never fails:
// every problem becomes an is_error result the model can act on. When ctx
// is cancelled (a user abort) the calls not yet run are not started, the
// running ones are cancelled unless they declare InterruptBlock, and every
// call still gets its result.
func (ex *Executor) Execute(ctx context.Context, turnNumber int, uses []trajectory.ContentBlock) []trajectory.ContentBlock {
	t := &turn{ex: ex, number: turnNumber, ctx: ctx, bashCancel: map[*call]context.CancelCauseFunc{}}
	for i, u := range uses {
		t.calls = append(t.calls, ex.newCall(t, i, u))
	}
	batches := partition(t.calls)
	for bi, b := range batches {
		for _, c := range b.calls {
			ex.cfg.Sink.Emit(turnNumber, &trajectory.ToolCall{
				ToolRef: c.ref(), Input: c.rawInput, Index: c.index, Batch: bi, ConcurrencySafe: b.safe,
			})
		}
	}
	for _, b := range batches {
		t.runBatch(b)
	}
	// All results go back in one message, in the blocks' order.
	results := make([]trajectory.ContentBlock, len(t.calls))
	for i, c := range t.calls {
		ex.cfg.Sink.Emit(turnNumber, &trajectory.ToolResult{ToolRef: c.ref(), Text: c.text, IsError: c.isError, Display: c.display})
		results[i] = c.modelResult()
	}
	return results
}

// modelResult is the tool_result block the model gets for a finished
// call: an outside source's text is marked untrusted.
func (c *call) modelResult() trajectory.ContentBlock {
	text := c.text
	if c.outside {
		text = untrusted(c.name, text)
	}
	return trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: c.id, Content: text, IsError: c.isError}
}

// partition merges contiguous concurrency-safe calls into one batch and
// gives every other call a batch of its own: the model's order
// is the dependency order, so [read a, edit a, read a] stays three batches.
func partition(calls []*call) []batch {
	var out []batch
	var prev *call
	for _, c := range calls {
		if joinsBatch(prev, c) {
			out[len(out)-1].calls = append(out[len(out)-1].calls, c)
		} else {
			out = append(out, batch{safe: c.safe, calls: []*call{c}})
		}
		prev = c
	}
	return out
}

// joinsBatch is the one batching rule, which partition and the stream's
// batchOf both apply: a call joins the batch of the call just before it
// (prev, nil for the first) when both are concurrency-safe; any other
// call opens a batch of its own.
func joinsBatch(prev, c *call) bool {
	return prev != nil && prev.safe && c.safe
}

// runBatch runs one batch to completion and then applies the calls'
// context modifiers in their original order.
func (t *turn) runBatch(b batch) {
	if !b.safe || len(b.calls) == 1 {
		for _, c := range b.calls {
			c.run()
		}
	} else {
		sem := make(chan struct{}, t.ex.cfg.MaxConcurrent)
		// A hook may turn a safe call into an unsafe one; such a call takes
		// the batch's lock exclusively, so it never overlaps the others.
		var exclusive sync.RWMutex
		var wg sync.WaitGroup
		for _, c := range b.calls {
			c.exclusive = &exclusive
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				c.run()
			}()
		}
		wg.Wait()
	}
	for _, c := range b.calls {
		if c.modify != nil {
			c.modify(t.ex.cfg.Env)
		}
	}
}

// startBash registers a running bash call so a failing sibling can stop
// it, or reports that the call must be skipped because one already failed.
func (t *turn) startBash(c *call, cancel context.CancelCauseFunc) (skip bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bashFailed {
		return true
	}
	t.bashCancel[c] = cancel
	return false
}

// endBash unregisters a bash call and, when it failed, stops the bash
// calls still running and makes the later ones skip.
func (t *turn) endBash(c *call, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bashCancel, c)
	if failed && !t.bashFailed {
		t.bashFailed = true
		for _, cancel := range t.bashCancel {
			cancel(errSiblingFailed)
		}
	}
}

// UntrustedTag is the tag that wraps, in what the model is sent, the
// result of a tool from an outside source: an MCP server or a built-in
// tool declaring Spec.Untrusted (a web fetch). Its text was written by a
// third party and may carry an injected instruction; the
// marker lets the model tell it from the harness's own words, and the
// system prompt's rules section says what it means. The recorded
// tool_result keeps the tool's output unmarked: the marker is part of
// the model's view, not of what the tool returned.
const UntrustedTag = "untrusted-content"

// fromOutside reports whether a tool's output comes from an outside source.
func fromOutside(s tools.Spec) bool { return s.Source == trajectory.ToolMCP || s.Untrusted }

// closingTag finds a closing untrusted-content tag in any letter case,
// the way a reader (or a model) would take it.
var closingTag = regexp.MustCompile(`(?i)</\s*(` + UntrustedTag + `)`)

// untrusted wraps text as untrusted content from tool. A closing tag
// inside the text is defused, so the content cannot end the wrapper early
// and pass what follows as the harness's words. The wrapping is a pure
// function of the result, made once when the result is created, so the
// messages sent earlier stay byte-stable.
func untrusted(tool, text string) string {
	text = closingTag.ReplaceAllString(text, "<\\/$1")
	return "<" + UntrustedTag + " source=\"" + tool + "\">\n" + text + "\n</" + UntrustedTag + ">"
}
