package tools

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/agent/workspace"
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
	root *workspace.Root
	reg  *Registry
	box  *sandbox.Sandbox

	mu    sync.RWMutex
	read  map[string]bool
	todos []Todo
}

// NewEnv returns the state of a new session in workspace. The workspace is
// made absolute with symlinks resolved, so that paths compare equal however
// the model spells them; it must be an existing directory. reg may be nil
// for a session without tool_search.
func NewEnv(dir string, reg *Registry) (*Env, error) {
	root, err := workspace.New(dir)
	if err != nil {
		return nil, err
	}
	return &Env{root: root, reg: reg, read: map[string]bool{}}, nil
}

// Workspace returns the absolute, symlink-free workspace directory.
func (e *Env) Workspace() string { return e.root.Dir() }

// Root returns the workspace boundary the tools open files through.
func (e *Env) Root() *workspace.Root { return e.root }

// Resolve turns a path as the model gave it (relative to the workspace, or
// absolute; "" is the workspace) into the file that will be opened, with
// the one resolution the permission chain checked (package workspace). A
// tool opens the returned Target and nothing else.
func (e *Env) Resolve(path string) (workspace.Target, error) {
	return e.root.Resolve(path)
}

// resolveError is the tool_error for a path that cannot be resolved.
func resolveError(err error, path string) Result {
	msg := "Cannot resolve " + path + ": " + err.Error() + ". Use a plain path inside the workspace."
	if strings.HasPrefix(path, "~") {
		msg += " Note that ~ is not expanded: give the absolute path."
	}
	return Result{Output: msg, IsError: true, ErrorCode: errorCode(err)}
}

// rel returns how output names abs: relative to the workspace when it lies
// inside it (so the model can pass it straight back to another tool), and
// absolute otherwise.
func (e *Env) rel(abs string) string {
	r, err := filepath.Rel(e.root.Dir(), abs)
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

// SetSandbox sets the sandbox every process a tool starts runs in. It is
// called once, before the session's first call; harness.Build always
// sets one (mode off included, which it records). An Env without one, as
// tests of single tools make, starts processes unsandboxed.
func (e *Env) SetSandbox(box *sandbox.Sandbox) { e.box = box }

// Sandbox returns the session's sandbox; nil runs processes unsandboxed.
func (e *Env) Sandbox() *sandbox.Sandbox { return e.box }

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
