package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestNewEnvResolvesTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewEnv(link, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env.Workspace() != want {
		t.Errorf("Workspace = %q, want the resolved %q", env.Workspace(), want)
	}
	cases := map[string]string{
		"a relative path resolves against the workspace": "src/a.go",
		"dot-dot segments are applied":                   "src/../b.go",
		"an empty path is the workspace":                 "",
		"an absolute path is kept, cleaned":              "/etc//hosts",
	}
	wants := map[string]string{
		"src/a.go":    filepath.Join(want, "src/a.go"),
		"src/../b.go": filepath.Join(want, "b.go"),
		"":            want,
		"/etc//hosts": "/etc/hosts",
	}
	for name, in := range cases {
		if got, err := env.Resolve(in); err != nil || got.Path != wants[in] {
			t.Errorf("%s: Resolve(%q) = %q, %v; want %q", name, in, got.Path, err, wants[in])
		}
	}
}

func TestNewEnvRefusesWhatIsNotADirectory(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "f.txt", "x")
	if _, err := NewEnv(file, nil); err == nil {
		t.Error("NewEnv accepted a file as workspace")
	}
	if _, err := NewEnv(filepath.Join(dir, "missing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("NewEnv of a missing directory: %v, want ErrNotExist", err)
	}
}

func TestEnvStateIsSafeForConcurrentUse(t *testing.T) {
	env := newTestEnv(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := filepath.Join(env.Workspace(), strings.Repeat("x", i+1))
			env.MarkRead(p)
			_ = env.WasRead(p)
			env.SetTodos([]Todo{{Content: "a", Status: TodoPending, ActiveForm: "A"}})
			_ = env.Todos()
		})
	}
	wg.Wait()
	if !env.WasRead(filepath.Join(env.Workspace(), "xxxx")) || env.WasRead(filepath.Join(env.Workspace(), "y")) {
		t.Error("read set is wrong after concurrent marks")
	}
}

func TestTodoWrite(t *testing.T) {
	todo := func(status TodoStatus) Todo {
		return Todo{Content: "Run tests", Status: status, ActiveForm: "Running tests"}
	}
	cases := []struct {
		name     string
		todos    []Todo
		contains string
	}{
		{"one item in progress is counted and the model is told to go on", []Todo{todo(TodoCompleted), todo(TodoInProgress), todo(TodoPending)},
			"3 items (1 completed, 1 in progress, 1 pending). Continue with the item in progress"},
		{"no item in progress nudges to start one", []Todo{todo(TodoPending)}, "mark the one you work on next in_progress"},
		{"two items in progress nudges to keep one", []Todo{todo(TodoInProgress), todo(TodoInProgress)}, "keep exactly one in_progress"},
		{"all completed asks for a summary to the user", []Todo{todo(TodoCompleted)}, "All items are completed"},
		{"an empty list clears it", []Todo{}, "now empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t)
			env.SetTodos([]Todo{{Content: "old", Status: TodoPending, ActiveForm: "Old"}})
			res := run(t, TodoWriteTool{}, env, todoInput{Todos: tc.todos})
			if res.IsError || !strings.Contains(res.Output, tc.contains) {
				t.Errorf("output %q (error %v) does not contain %q", res.Output, res.IsError, tc.contains)
			}
			if got := env.Todos(); !slices.Equal(got, tc.todos) {
				t.Errorf("Todos after Modify = %+v, want %+v", got, tc.todos)
			}
		})
	}
}

func TestTodoWriteRefusesAnUnknownStatusWithoutStoringIt(t *testing.T) {
	env := newTestEnv(t)
	res := run(t, TodoWriteTool{}, env, json.RawMessage(`{"todos":[{"content":"a","status":"doing","active_form":"A"}]}`))
	if !res.IsError || !strings.Contains(res.Output, "pending, in_progress or completed") {
		t.Errorf("result = %+v", res)
	}
	if len(env.Todos()) != 0 {
		t.Errorf("the refused list was stored")
	}
}

// searchRegistry is the built-ins plus deferred tools, one of whose
// descriptions says "already" and another "thread".
func searchEnv(t *testing.T) *Env {
	t.Helper()
	tools := append(Builtins(),
		fake("cron_create", "Schedules a job; does nothing if it is already scheduled.", true),
		fake("thread_dump", "Prints every thread.", true),
		fake("notebook_read", "Shows the cells of a Jupyter notebook.", true),
	)
	reg, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	env, err := NewEnv(t.TempDir(), reg)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// definitionsIn returns the names of the definitions listed in a
// tool_search output, one JSON object per line.
func definitionsIn(t *testing.T, output string) []string {
	t.Helper()
	var names []string
	for line := range strings.Lines(output) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var def struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal([]byte(line), &def); err != nil {
			t.Fatalf("definition line is not JSON: %v: %s", err, line)
		}
		if def.Description == "" || len(def.Schema) == 0 {
			t.Errorf("definition of %s lacks description or schema", def.Name)
		}
		names = append(names, def.Name)
	}
	return names
}

func TestToolSearch(t *testing.T) {
	cases := []struct {
		name      string
		input     toolSearchInput
		found     []string
		activated string // Active() afterwards, past the built-ins
	}{
		{"select loads a deferred tool by exact name", toolSearchInput{Query: "select:cron_create"}, []string{"cron_create"}, "cron_create"},
		{"select of several names loads them in the order given", toolSearchInput{Query: "select:thread_dump,cron_create"}, []string{"thread_dump", "cron_create"}, "thread_dump,cron_create"},
		{"a keyword matches on word boundaries, not inside already or thread", toolSearchInput{Query: "read"}, []string{"notebook_read"}, "notebook_read"},
		{"max_results caps a keyword search", toolSearchInput{Query: "prints shows", MaxResults: 1}, []string{"thread_dump"}, "thread_dump"},
		{"select of a loaded built-in returns its definition and loads nothing more", toolSearchInput{Query: "select:read"}, []string{"read"}, ""},
		{"no match lists nothing and loads nothing", toolSearchInput{Query: "kubernetes"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := searchEnv(t)
			res := run(t, ToolSearchTool{}, env, tc.input)
			if res.IsError {
				t.Fatalf("tool_search failed: %s", res.Output)
			}
			if got := definitionsIn(t, res.Output); !slices.Equal(got, tc.found) {
				t.Errorf("found %v, want %v; output:\n%s", got, tc.found, res.Output)
			}
			if tc.found == nil && !strings.Contains(res.Output, "No tools matched") {
				t.Errorf("a search without matches does not say so: %q", res.Output)
			}
			active := names(env.Registry().Active())
			base := names(Builtins())
			got := strings.TrimPrefix(strings.TrimPrefix(active, base), ",")
			if got != tc.activated {
				t.Errorf("activated %q, want %q", got, tc.activated)
			}
		})
	}
}

func TestToolSearchActivatesOnlyThroughModify(t *testing.T) {
	env := searchEnv(t)
	res, err := ToolSearchTool{}.Run(t.Context(), env, mustJSON(t, toolSearchInput{Query: "select:cron_create"}))
	if err != nil {
		t.Fatal(err)
	}
	if env.Registry().IsLoaded("cron_create") {
		t.Fatal("tool_search loaded the tool before the executor applied Modify")
	}
	res.Modify(env)
	if !env.Registry().IsLoaded("cron_create") {
		t.Error("Modify did not load the tool")
	}
}

func TestToolSearchWithoutARegistrySaysThereIsNothingElse(t *testing.T) {
	env, err := NewEnv(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, ToolSearchTool{}, env, toolSearchInput{Query: "x"})
	if res.IsError || !strings.Contains(res.Output, "No other tools") {
		t.Errorf("result = %+v", res)
	}
}
