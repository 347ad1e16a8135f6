package mockllm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Mode is how a Replay picks the recorded response for a request. Every
// mode fails closed: a request it cannot answer gets an error wrapping
// llm.ErrReplayMiss, never a made-up answer and never a live call (the
// idea of go-vcr's recorder.Mode).
type Mode int

const (
	// ModeOrdered answers the n-th request with the n-th recorded
	// response (of its conversation, when the replay routes). It is the
	// zero value and what a replay always did.
	ModeOrdered Mode = iota
	// ModeMatch answers a request with the response whose recorded
	// request asked the same: the same system prompt, the same tools and
	// the same messages, once their volatile parts are normalised (see
	// Normalize). When several unused recorded requests match, the first
	// in the recording answers. Order and interleaving do not matter, so
	// concurrent conversations replay however they interleave.
	ModeMatch
)

// Modes lists the modes by name, for flags and errors.
var Modes = []string{"ordered", "match"}

// String returns the mode's name.
func (m Mode) String() string {
	if int(m) >= 0 && int(m) < len(Modes) {
		return Modes[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode name; anything else is an error, so a typo never
// falls back to another mode.
func ParseMode(s string) (Mode, error) {
	for i, name := range Modes {
		if s == name {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown replay mode %q; use one of %s", s, strings.Join(Modes, ", "))
}

// Route is how requests are grouped into conversations, each with its own
// turn sequence, so that an agent that runs subagents or several sessions
// at once can be scripted and replayed.
type Route int

const (
	// RouteNone puts every request in one conversation: one turn sequence
	// for all. It is the zero value.
	RouteNone Route = iota
	// RouteHeader groups requests by the value of the ConversationHeader
	// request header; a request without it is in the conversation "".
	RouteHeader
	// RoutePrompt groups requests by their system prompt and first user
	// message, normalised (PromptKey): what tells a main agent from a
	// subagent, and one session from another, without help from the client.
	RoutePrompt
)

// Routes lists the routes by name, for flags and errors.
var Routes = []string{"none", "header", "prompt"}

// String returns the route's name.
func (r Route) String() string {
	if int(r) >= 0 && int(r) < len(Routes) {
		return Routes[r]
	}
	return fmt.Sprintf("Route(%d)", int(r))
}

// ParseRoute reads a route name; anything else is an error.
func ParseRoute(s string) (Route, error) {
	for i, name := range Routes {
		if s == name {
			return Route(i), nil
		}
	}
	return 0, fmt.Errorf("unknown conversation route %q; use one of %s", s, strings.Join(Routes, ", "))
}

// ConversationHeader is the request header that names a request's
// conversation for RouteHeader and for a script conversation that matches
// by header. A client (or a proxy in front of it) sets it per session or
// per subagent.
const ConversationHeader = "X-Retrace-Conversation"

// DefaultMaxConversations is how many conversations a routed Script tracks
// when its options set no number. Each costs a few words; the bound keeps
// a client that invents a new conversation per request from growing the
// server without end.
const DefaultMaxConversations = 1024

// ErrTooManyConversations means a routed source was asked to track more
// conversations than its bound.
var ErrTooManyConversations = errors.New("too many conversations")

// ErrNoConversation means a request matched none of a script's
// conversations.
var ErrNoConversation = errors.New("the request matches no conversation of the script")

type conversationKey struct{}

// WithConversation returns ctx carrying the conversation header value id;
// the Server sets it from ConversationHeader, in-process callers set it
// themselves.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// ConversationFrom returns the conversation header value ctx carries, and
// whether it carries one.
func ConversationFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(conversationKey{}).(string)
	return id, ok
}

// The built-in normalisation rules of Normalize, applied in this order so
// that a timestamp is replaced whole before its date or clock time is.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "<UUID>"},
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`), "<TIME>"},
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`), "<DATE>"},
	{regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b`), "<TIME>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s)\b`), "<DURATION>"},
	{regexp.MustCompile(`(/private)?(/tmp|/var/folders)/[^\s"'\\]+`), "<TMP>"},
	{regexp.MustCompile(`\b[0-9a-f]{12,}\b`), "<HEX>"},
}

// Normalize replaces the volatile parts of a text that differ from run to
// run and do not change what is asked: UUIDs, timestamps, dates, clock
// times, durations (12ms, 1.5s), temporary paths (/tmp/..., /var/folders/...)
// and hex ids of 12 digits or more. ModeMatch and RoutePrompt compare texts
// after it.
func Normalize(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// PromptKey is the conversation key of a request under RoutePrompt: the
// normalised system prompt and the text of the first user message. A
// subagent has its own system prompt and task; two sessions of one agent
// have their own first message.
func PromptKey(req *llm.Request) string {
	first := ""
	for i := range req.Messages {
		if req.Messages[i].Role == trajectory.RoleUser {
			first = messageText(&req.Messages[i])
			break
		}
	}
	return trajectory.Hash([]byte(Normalize(req.System) + "\x00" + Normalize(first)))
}
