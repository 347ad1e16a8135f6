package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// TodoStatus is the state of one item of the model's todo list.
type TodoStatus string

// The todo statuses.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of the todo list the model keeps with todo_write.
type Todo struct {
	// Content says what is to be done, in the imperative ("Run the tests").
	Content string `json:"content" jsonschema:"minLength=1" jsonschema_description:"What is to be done, in the imperative form (e.g. Run the tests)."`
	// Status is where the item stands.
	Status TodoStatus `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed" jsonschema_description:"pending (not started), in_progress (being worked on now; keep exactly one such item), or completed (done)."`
	// ActiveForm is the present-continuous form shown while the item is in
	// progress ("Running the tests").
	ActiveForm string `json:"active_form" jsonschema:"minLength=1" jsonschema_description:"The present continuous form shown while the item is in progress (e.g. Running the tests)."`
}

// Env is the session state tools run in: the workspace, which files the
// model has read, its todo list and the tool registry. It is safe for
// concurrent use, because the calls of a parallel batch share it.
type Env struct {
	workspace string
	reg       *Registry

	mu    sync.RWMutex
	read  map[string]bool
	todos []Todo
}

// NewEnv returns the state of a new session in workspace. The workspace is
// made absolute with symlinks resolved, so that paths compare equal however
// the model spells them; it must be an existing directory. reg may be nil
// for a session without tool_search.
func NewEnv(workspace string, reg *Registry) (*Env, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory: give the project directory instead", workspace)
	}
	return &Env{workspace: abs, reg: reg, read: map[string]bool{}}, nil
}

// Workspace returns the absolute, symlink-free workspace directory.
func (e *Env) Workspace() string { return e.workspace }

// Abs resolves a path as the model gave it: relative paths are relative to
// the workspace, and the result is cleaned. An empty path is the workspace.
func (e *Env) Abs(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(e.workspace, path)
}

// rel returns how output names abs: relative to the workspace when it lies
// inside it (so the model can pass it straight back to another tool), and
// absolute otherwise.
func (e *Env) rel(abs string) string {
	r, err := filepath.Rel(e.workspace, abs)
	if err != nil || r == ".." || len(r) > 2 && r[:3] == ".."+string(filepath.Separator) {
		return abs
	}
	return filepath.ToSlash(r)
}

// MarkRead records that the model has seen the current content of the file
// at abs, which edit requires before it changes a file.
func (e *Env) MarkRead(abs string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.read[filepath.Clean(abs)] = true
}

// WasRead reports whether the file at abs was read in this session.
func (e *Env) WasRead(abs string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.read[filepath.Clean(abs)]
}

// Registry returns the session's tool registry; it may be nil.
func (e *Env) Registry() *Registry { return e.reg }

// SetTodos replaces the todo list.
func (e *Env) SetTodos(todos []Todo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.todos = slices.Clone(todos)
}

// Todos returns a copy of the todo list.
func (e *Env) Todos() []Todo {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Clone(e.todos)
}
