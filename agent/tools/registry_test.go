package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// fakeTool is a tool with a given Spec, for registry tests: the registry
// only looks at declarations.
type fakeTool struct{ spec Spec }

func (f fakeTool) Spec() Spec                           { return f.spec }
func (f fakeTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (f fakeTool) Run(context.Context, *Env, json.RawMessage) (Result, error) {
	return Result{Output: f.spec.Name}, nil
}

func fake(name, desc string, deferred bool) Tool {
	return fakeTool{Spec{Name: name, Description: desc, Schema: json.RawMessage(`{"type":"object"}`), Deferred: deferred}}
}

func names(tools []Tool) string {
	var n []string
	for _, t := range tools {
		n = append(n, t.Spec().Name)
	}
	return strings.Join(n, ",")
}

func TestNewRegistryRefusesBadTools(t *testing.T) {
	cases := map[string][]Tool{
		"two tools with the same name":       {fake("read", "a", false), fake("read", "b", true)},
		"a name with a space":                {fake("read file", "a", false)},
		"a name with a dot":                  {fake("mcp.read", "a", false)},
		"an empty name":                      {fake("", "a", false)},
		"a name longer than 64 characters":   {fake(strings.Repeat("a", 65), "a", false)},
		"a nil tool":                         {nil},
		"a schema that is not a JSON object": {fakeTool{Spec{Name: "x", Schema: json.RawMessage(`[1]`)}}},
		"a schema that is not JSON at all":   {fakeTool{Spec{Name: "x", Schema: json.RawMessage(`{`)}}},
	}
	for name, tools := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewRegistry(tools...)
			if !errors.Is(err, ErrInvalidTool) {
				t.Errorf("NewRegistry error = %v, want ErrInvalidTool", err)
			}
		})
	}
	if _, err := NewRegistry(fake("a-b_C9", "x", false), fake(strings.Repeat("z", 64), "y", false)); err != nil {
		t.Errorf("NewRegistry refused valid names: %v", err)
	}
}

func TestActiveKeepsRegistrationOrderAndAppendsActivatedTools(t *testing.T) {
	r, err := NewRegistry(
		fake("read", "", false),
		fake("cron_create", "", true),
		fake("write", "", false),
		fake("notebook_edit", "", true),
		fake("web_fetch", "", true),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.Active()); got != "read,write" {
		t.Errorf("Active before activation = %s, want read,write", got)
	}
	if got := names(r.Deferred()); got != "cron_create,notebook_edit,web_fetch" {
		t.Errorf("Deferred = %s", got)
	}
	if r.IsLoaded("web_fetch") || !r.IsLoaded("read") || r.IsLoaded("nope") {
		t.Errorf("IsLoaded before activation is wrong")
	}
	// Activation order, not registration order: appending keeps the
	// earlier definitions a stable cached prefix.
	r.Activate("web_fetch", "nope", "read")
	r.Activate("cron_create", "web_fetch")
	if got := names(r.Active()); got != "read,write,web_fetch,cron_create" {
		t.Errorf("Active after activation = %s, want read,write,web_fetch,cron_create", got)
	}
	if got := names(r.Deferred()); got != "notebook_edit" {
		t.Errorf("Deferred after activation = %s, want notebook_edit", got)
	}
	if !r.IsLoaded("web_fetch") || r.IsLoaded("notebook_edit") {
		t.Errorf("IsLoaded after activation is wrong")
	}
	if got := names(r.All()); got != "read,cron_create,write,notebook_edit,web_fetch" {
		t.Errorf("All = %s", got)
	}
	if tool, ok := r.Lookup("notebook_edit"); !ok || tool.Spec().Name != "notebook_edit" {
		t.Errorf("Lookup of a deferred tool failed")
	}
	if _, ok := r.Lookup("Read"); ok {
		t.Errorf("Lookup is case sensitive, but found Read")
	}
}

func TestSearch(t *testing.T) {
	r, err := NewRegistry(
		fake("read", "Reads a file.", false),
		fake("cron_create", "Schedules a job that is already planned.", true),
		fake("mcp__github__create_issue", "Opens an issue in a GitHub repository.", true),
		fake("NotebookEdit", "Changes a cell of a Jupyter notebook.", true),
		fake("thread_dump", "Prints every goroutine; ready for debugging.", true),
		fake("issue_lister", "Lists things.", true),
		fake("web_fetch", "Fetches a URL and returns it as markdown; use it to read web pages.", true),
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		max         int
		want        string
	}{
		{"select loads the exact names in the order given, ignoring unknown ones and max", "select:web_fetch, nope ,cron_create", 1, "web_fetch,cron_create"},
		{"select does not match names loosely", "select:web", 5, ""},
		{"a keyword matches on word boundaries, so read does not match already, thread or ready", "read", 10, "web_fetch"},
		{"a keyword search leaves out tools that are not deferred", "file", 10, ""},
		{"a name hit ranks above a description hit", "issue", 10, "mcp__github__create_issue,issue_lister"},
		{"words of an MCP name split on underscores match a natural query", "create issue", 10, "mcp__github__create_issue,cron_create,issue_lister"},
		{"camel case names split into words", "notebook", 10, "NotebookEdit"},
		{"matching ignores case", "JUPYTER", 10, "NotebookEdit"},
		{"a required +word drops tools without it", "create +github", 10, "mcp__github__create_issue"},
		{"max caps the number of results", "create issue", 1, "mcp__github__create_issue"},
		{"the whole name ranks first", "web_fetch", 10, "web_fetch"},
		{"a query of only punctuation matches nothing", "  -- ", 10, ""},
		{"an unknown word matches nothing", "kubernetes", 10, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(r.Search(tc.query, tc.max)); got != tc.want {
				t.Errorf("Search(%q, %d) = %q, want %q", tc.query, tc.max, got, tc.want)
			}
		})
	}
	r.Activate("web_fetch")
	if got := names(r.Search("markdown", 10)); got != "" {
		t.Errorf("a keyword search found the loaded web_fetch: %q", got)
	}
	if got := names(r.Search("select:web_fetch,read", 10)); got != "web_fetch,read" {
		t.Errorf("select of loaded tools = %q, want web_fetch,read", got)
	}
}

func TestNameWords(t *testing.T) {
	cases := map[string]string{
		"mcp__github__create_issue": "mcp github create issue",
		"readFile":                  "read file",
		"HTTPServer":                "http server",
		"enter-plan-mode":           "enter plan mode",
		"tool2Go":                   "tool2 go",
		"":                          "",
	}
	for in, want := range cases {
		if got := strings.Join(nameWords(in), " "); got != want {
			t.Errorf("nameWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryIsSafeForConcurrentActivation(t *testing.T) {
	r, err := NewRegistry(fake("a", "", false), fake("b", "", true), fake("c", "", true))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for _, n := range []string{"b", "c", "b", "c"} {
		go func() {
			r.Activate(n)
			_ = r.Active()
			_ = r.IsLoaded(n)
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	if got := len(r.Active()); got != 3 {
		t.Errorf("Active has %d tools after activating b and c twice each, want 3", got)
	}
}
