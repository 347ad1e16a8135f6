package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzToolDeclarationsNeverPanic feeds arbitrary model input to every
// built-in's per-call declarations, which the executor asks before
// validation could have caught anything odd in the permission path.
func FuzzToolDeclarationsNeverPanic(f *testing.F) {
	for _, s := range []string{`{}`, `{"command":"ls"}`, `{"file_path":"a"}`, `{"pattern":"**"}`, `null`, `[`, `{"command":"$(("}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, tool := range Builtins() {
			_ = tool.ConcurrencySafe(input)
			if p, ok := tool.(PathTool); ok {
				_ = p.Paths(input)
			}
			if c, ok := tool.(CommandTool); ok {
				_ = c.Command(input)
			}
		}
	})
}

// FuzzRunOnModelInput runs the tools that only read, with arbitrary input,
// in a temporary workspace: whatever the model sends, they return a Result
// or an error, never a panic.
func FuzzRunOnModelInput(f *testing.F) {
	for _, s := range []string{
		`{"file_path":"a.txt"}`, `{"file_path":"a.txt","offset":2,"limit":1}`, `{"file_path":"/dev/zero"}`,
		`{"todos":[{"content":"a","status":"pending","active_form":"A"}]}`, `{"query":"select:read,"}`, `{"query":"+read -x"}`,
	} {
		f.Add([]byte(s))
	}
	env := newTestEnv(f)
	writeFile(f, env.Workspace(), "a.txt", "one\ntwo\n")
	tools := []Tool{ReadTool{}, TodoWriteTool{}, ToolSearchTool{}}
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, tool := range tools {
			res, err := tool.Run(context.Background(), env, json.RawMessage(input))
			if err == nil && res.IsError && res.ErrorCode == "" {
				t.Errorf("%s: an error result without an ErrorCode: %q", tool.Spec().Name, res.Output)
			}
		}
	})
}

// FuzzReadLine checks read's line splitter on arbitrary file content: it
// finds as many lines as there are, and never shows more than the limit.
func FuzzReadLine(f *testing.F) {
	for _, s := range []string{"", "a", "a\n", "a\nb", "\n\n", "é\r\nü", strings.Repeat("x", 70000) + "\ny"} {
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxRunes int) {
		maxRunes = 1 + int(uint(maxRunes)%100)
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		want := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			want++
		}
		got := 0
		for {
			line, more, err := readLine(br, maxRunes)
			if !more {
				break
			}
			got++
			if !utf8.ValidString(line) {
				t.Fatalf("line %d is not valid UTF-8: %q", got, line)
			}
			shown, _, _ := strings.Cut(line, "… [line cut")
			if n := utf8.RuneCountInString(shown); n > maxRunes {
				t.Fatalf("line %d shows %d characters, limit %d", got, n, maxRunes)
			}
			if err != nil {
				break
			}
		}
		if got != want {
			t.Fatalf("readLine found %d lines, want %d", got, want)
		}
	})
}

// FuzzSearch checks tool_search's query parser: any query returns known
// tools, without duplicates, within max for keyword searches.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"read", "select:read,write", "+create issue", "HTTPServer", "select:", "++", "é ü"} {
		f.Add(s, 3)
	}
	reg, err := NewRegistry(append(Builtins(),
		fake("mcp__github__create_issue", "Opens an issue.", true),
		fake("cron_create", "Schedules a job; already planned jobs stay.", true),
	)...)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string, max int) {
		got := reg.Search(query, max)
		seen := map[string]bool{}
		for _, tool := range got {
			name := tool.Spec().Name
			if _, ok := reg.Lookup(name); !ok || seen[name] {
				t.Fatalf("Search(%q) returned unknown or repeated %q", query, name)
			}
			seen[name] = true
		}
		if !strings.HasPrefix(strings.TrimSpace(query), "select:") && max > 0 && len(got) > max {
			t.Fatalf("Search(%q, %d) returned %d tools", query, max, len(got))
		}
	})
}
