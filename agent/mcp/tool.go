package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// MaxDescription is the most characters of a server's tool description
// sent to the model: you do not control how much an external server
// writes, and every character is paid for on every turn.
const MaxDescription = 2048

// MaxOutputTokens is the budget of one call's output in estimated tokens
// (tools.EstimateTokens: a quarter of a token per ASCII character, half a
// token per other character), which every MCP tool declares as its
// tools.Spec.ResultTokens: the executor truncates longer output for the
// model and spills the whole of it to a blob. Counting
// tokens, not characters, keeps the budget the same for Chinese, English
// and JSON.
const MaxOutputTokens = 25000

// ResultLimit is MaxOutputTokens in ASCII characters, four to a token: the
// most plain-English output that reaches the model whole. Output in other
// scripts reaches the limit in fewer characters.
const ResultLimit = MaxOutputTokens * 4

// Error codes of MCP tool results, as labels for the trajectory.
const (
	// CodeError marks a result the server flagged with isError, or a
	// request the server rejected.
	CodeError = "mcp_error"
	// CodeTimeout marks a call cancelled after the server's call timeout.
	CodeTimeout = "mcp_timeout"
	// CodeReconnecting marks a call not made because its server lost its
	// connection and is being reconnected.
	CodeReconnecting = "mcp_reconnecting"
	// CodeDisconnected marks a call not made, or cut off, because its
	// server is gone: it failed, or its connection dropped during the call.
	CodeDisconnected = "mcp_disconnected"
)

// imageTokens is what an image is counted as in the output estimate; it is
// named in the placeholder so the model knows something was there.
const imageTokens = 1600

// Tool is one tool of a connected MCP server, as a tools.Tool.
type Tool struct {
	spec     tools.Spec
	server   string
	remote   string
	readOnly bool
	timeout  time.Duration
	// owner and srv give the server's current session: a reconnect
	// replaces it, and the tool keeps working under the same name.
	owner *Servers
	srv   *server
}

var _ tools.Tool = (*Tool)(nil)

// Spec returns the tool's declarations: MCP source, deferred unless the
// server's config says otherwise, read-only only when the server says so.
func (t *Tool) Spec() tools.Spec { return t.spec }

// Server returns the configured name of the tool's server.
func (t *Tool) Server() string { return t.server }

// RemoteName returns the tool's name on its server, before normalisation.
func (t *Tool) RemoteName() string { return t.remote }

// ConcurrencySafe reports the server's readOnlyHint: a tool that says it
// changes nothing may run beside its neighbours; anything else is run
// alone, because we cannot see inside it.
func (t *Tool) ConcurrencySafe(json.RawMessage) bool { return t.readOnly }

// Run calls the tool on its server within the call timeout. A result the
// server flags as an error, a request it rejects, and a timeout are tool
// errors the model can act on; a broken connection is returned as an error
// naming the server.
func (t *Tool) Run(ctx context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	callCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	args := input
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	session, state, attempt, why := t.owner.live(t.srv)
	switch {
	case errors.Is(why, errClosed):
		return tools.Result{}, fmt.Errorf("mcp server %q, tool %q: %w", t.server, t.remote, why)
	case state == StateReconnecting:
		return tools.Result{
			Output: fmt.Sprintf("MCP server %q lost its connection (%v) and is reconnecting (attempt %d of %d), so %s was not called. "+
				"Retry it in a few seconds.", t.server, why, attempt, t.owner.opts.MaxReconnects, t.spec.Name),
			IsError:   true,
			ErrorCode: CodeReconnecting,
		}, nil
	case session == nil:
		return tools.Result{
			Output: fmt.Sprintf("MCP server %q is disconnected (%v), so %s cannot be called in this session. "+
				"Do the work another way.", t.server, why, t.spec.Name),
			IsError:   true,
			ErrorCode: CodeDisconnected,
		}, nil
	}
	res, err := session.CallTool(callCtx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, fmt.Errorf("mcp server %q, tool %q: %w", t.server, t.remote, ctx.Err())
		}
		if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return tools.Result{
				Output: fmt.Sprintf("The connection to MCP server %q dropped during the call to %s (%v); it will be reconnected. "+
					"The call may or may not have taken effect: check before you retry it.", t.server, t.spec.Name, err),
				IsError:   true,
				ErrorCode: CodeDisconnected,
			}, nil
		}
		if callCtx.Err() != nil {
			return tools.Result{
				Output: fmt.Sprintf("MCP server %q did not answer %s within %v, so the call was cancelled. "+
					"Retry with a smaller request, or do the work another way.", t.server, t.spec.Name, t.timeout),
				IsError:   true,
				ErrorCode: CodeTimeout,
			}, nil
		}
		if we, ok := errors.AsType[*jsonrpc.Error](err); ok {
			return tools.Result{
				Output: fmt.Sprintf("MCP server %q rejected the call to %s: %s (code %d). "+
					"Check the input against the tool's schema and try again.", t.server, t.spec.Name, we.Message, we.Code),
				IsError:   true,
				ErrorCode: CodeError,
			}, nil
		}
		return tools.Result{}, fmt.Errorf("mcp server %q, tool %q: %w", t.server, t.remote, err)
	}
	out := resultText(res)
	if res.IsError {
		if out == "" {
			out = fmt.Sprintf("MCP server %q reported that %s failed, without saying why.", t.server, t.spec.Name)
		}
		return tools.Result{Output: out, IsError: true, ErrorCode: CodeError}, nil
	}
	return tools.Result{Output: out}, nil
}

// resultText joins a result's content into the model-side text. Content
// the model cannot receive here (images, audio, binary resources) is
// replaced by a placeholder that says so, never dropped silently: a
// missing picture must not read as "there was no picture".
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image omitted: %s, %d bytes, about %d tokens; this runtime does not pass images to the model]",
				orUnknown(c.MIMEType), len(c.Data), imageTokens))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio omitted: %s, %d bytes; this runtime does not pass audio to the model]",
				orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			switch {
			case c.Resource == nil:
				parts = append(parts, "[empty embedded resource]")
			case c.Resource.Text != "" || len(c.Resource.Blob) == 0:
				parts = append(parts, c.Resource.Text)
			default:
				parts = append(parts, fmt.Sprintf("[binary resource omitted: %s, %s, %d bytes]",
					c.Resource.URI, orUnknown(c.Resource.MIMEType), len(c.Resource.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of type %T omitted]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// newTool builds the tools.Tool for one listed tool, or says why the tool
// cannot be offered to the model.
func newTool(owner *Servers, srv *server, name string, t *sdk.Tool) (*Tool, error) {
	cfg := srv.cfg
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	desc := t.Description
	if strings.TrimSpace(desc) == "" {
		desc = t.Title
	}
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("Tool %q of the MCP server %q.", t.Name, cfg.Name)
	}
	return &Tool{
		spec: tools.Spec{
			Name:         name,
			Description:  capDescription(desc),
			Schema:       schema,
			ReadOnly:     readOnly,
			Display:      trajectory.DisplayFull,
			ResultTokens: MaxOutputTokens,
			Deferred:     srv.deferred,
			Interrupt:    tools.InterruptCancel,
			EmptyOutput:  fmt.Sprintf("(%s returned no content)", name),
			Source:       trajectory.ToolMCP,
		},
		server:   cfg.Name,
		remote:   t.Name,
		readOnly: readOnly,
		timeout:  cfg.callTimeout(),
		owner:    owner,
		srv:      srv,
	}, nil
}

// inputSchema returns the server's input schema as JSON. The model API
// takes only object schemas; a tool without one takes an empty object.
func inputSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema cannot be encoded: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	typ, ok := obj["type"]
	if !ok {
		obj["type"] = json.RawMessage(`"object"`)
		return json.Marshal(obj)
	}
	var name string
	if err := json.Unmarshal(typ, &name); err != nil || name != "object" {
		return nil, fmt.Errorf("input schema has type %s; the model API only takes object schemas", typ)
	}
	return b, nil
}

// capDescription cuts a description to MaxDescription characters, saying
// that it was cut so the model does not take the rest for absent.
func capDescription(s string) string {
	if utf8.RuneCountInString(s) <= MaxDescription {
		return s
	}
	const marker = " […description truncated]"
	keep := MaxDescription - utf8.RuneCountInString(marker)
	i := 0
	for pos := range s {
		if i == keep {
			return s[:pos] + marker
		}
		i++
	}
	return s
}
