package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The helper server is this test binary re-executed with helperEnv set:
// a real MCP server on a real stdio pipe, written with the SDK.
const (
	helperEnv = "RETRACE_MCP_HELPER"
	// gateEnv names a file the helper waits for before it serves, so a
	// test can hold a server in "connecting" without timing anything.
	gateEnv = "RETRACE_MCP_HELPER_GATE"
	// restartEnv names a directory: the first helper started serves at
	// once, and every later one (a reconnect) waits for the file "go" in
	// it, so a test can hold a server in "reconnecting", or exits at once
	// when the file "down" is there, so a test can keep it down.
	restartEnv = "RETRACE_MCP_HELPER_RESTART"
)

// longToolName is longer than the API's limit once prefixed.
var longToolName = "a_tool_whose_name_is_far_too_long_for_the_api_limit_of_sixty_four"

// TestHelperMCPServer is not a test: it is the helper server's main.
func TestHelperMCPServer(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for the stdio MCP tests; runs only when re-executed by them")
	}
	if gate := os.Getenv(gateEnv); gate != "" {
		for {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if dir := os.Getenv(restartEnv); dir != "" {
		if err := os.Mkdir(filepath.Join(dir, "started"), 0o755); err != nil {
			if _, err := os.Stat(filepath.Join(dir, "down")); err == nil {
				os.Exit(1)
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	s := helperServer()
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		os.Exit(1)
	}
	os.Exit(0)
}

// textInput is the schema of the helper tools that take a text.
var textInput = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// helperServer is the MCP server the tests talk to.
func helperServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: textInput,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text("echo: " + in.Text), nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("disk full")
			r.IsError = true
			return r, nil
		})
	s.AddTool(&sdk.Tool{Name: "slow", Description: "Never answers until cancelled.", InputSchema: empty},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "big", Description: "Prints a lot.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strings.Repeat("x", 3*ResultLimit/2)), nil
		})
	s.AddTool(&sdk.Tool{Name: "exit", Description: "Ends the server process, as a crash would.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "chinese", Description: "Prints 60,000 Chinese characters, 30,000 estimated tokens.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strings.Repeat("汉", 60000)), nil
		})
	s.AddTool(&sdk.Tool{Name: "english", Description: "Prints 90,000 ASCII characters, 22,500 estimated tokens.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strings.Repeat("word ", 18000)), nil
		})
	s.AddTool(&sdk.Tool{Name: "picture", Description: "Returns an image and a caption.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
				&sdk.TextContent{Text: "a caption"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "verbose", Description: strings.Repeat("word ", 2000), InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
	s.AddTool(&sdk.Tool{Name: "read.file", Description: "Dotted name.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("dotted"), nil })
	s.AddTool(&sdk.Tool{Name: "read_file", Description: "Underscored name.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("underscored"), nil
		})
	s.AddTool(&sdk.Tool{Name: longToolName, Description: "Long name.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("long"), nil })
	return s
}

// helperConfig configures a server that runs the helper.
func helperConfig(t testing.TB, name string, env map[string]string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{helperEnv: "1"}
	for k, v := range env {
		e[k] = v
	}
	return Config{Name: name, Command: exe, Args: []string{"-test.run=^TestHelperMCPServer$"}, Env: e}
}
