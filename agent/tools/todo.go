package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

type todoInput struct {
	Todos []Todo `json:"todos" jsonschema_description:"The complete updated todo list; it replaces the previous one. Give an empty list to clear it."`
}

// TodoWriteTool is the todo_write built-in: the model's own task list.
type TodoWriteTool struct{}

var todoSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "todo_write",
		Description: "Replaces your todo list for this session with the list given. Use it for tasks with three or more steps: " +
			"write the steps down at the start, keep exactly one item in_progress while you work on it, and mark each item completed as soon as it is done. " +
			"Skip it for simple one-step tasks. Each call sends the whole list; it changes no files.",
		Schema:   SchemaFor[todoInput](),
		ReadOnly: true, // it touches no workspace file
		// The output is a nudge for the model; the user sees the list
		// itself elsewhere.
		Display:     trajectory.DisplayHidden,
		ResultLimit: 0,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(the tool succeeded with no output)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns todo_write's declarations.
func (TodoWriteTool) Spec() Spec { return todoSpec() }

// ConcurrencySafe reports false: the call replaces shared session state,
// so two in one batch would race for the last word.
func (TodoWriteTool) ConcurrencySafe(json.RawMessage) bool { return false }

// Run checks the list and returns it as a Modify that stores it in the Env.
func (TodoWriteTool) Run(_ context.Context, _ *Env, input json.RawMessage) (Result, error) {
	in, err := decode[todoInput](input)
	if err != nil {
		return invalidInput("todo_write", err), nil
	}
	counts := map[TodoStatus]int{}
	for i, t := range in.Todos {
		switch t.Status {
		case TodoPending, TodoInProgress, TodoCompleted:
		default:
			return Result{IsError: true, ErrorCode: "invalid_input",
				Output: fmt.Sprintf("todos[%d].status is %q; use pending, in_progress or completed.", i, t.Status)}, nil
		}
		if strings.TrimSpace(t.Content) == "" {
			return Result{IsError: true, ErrorCode: "invalid_input",
				Output: fmt.Sprintf("todos[%d].content is empty; say what is to be done.", i)}, nil
		}
		counts[t.Status]++
	}
	todos := in.Todos
	return Result{
		Output: todoNudge(len(todos), counts),
		Modify: func(e *Env) { e.SetTodos(todos) },
	}, nil
}

// todoNudge is the model-only text after an update: where the list stands
// and what to do next.
func todoNudge(total int, counts map[TodoStatus]int) string {
	if total == 0 {
		return "The todo list is now empty."
	}
	summary := fmt.Sprintf("Todo list updated: %d items (%d completed, %d in progress, %d pending).",
		total, counts[TodoCompleted], counts[TodoInProgress], counts[TodoPending])
	switch {
	case counts[TodoCompleted] == total:
		return summary + " All items are completed. If you have not told the user the outcome yet, summarise it now."
	case counts[TodoInProgress] == 0:
		return summary + " No item is in progress: mark the one you work on next in_progress."
	case counts[TodoInProgress] > 1:
		return summary + " Several items are in progress: keep exactly one in_progress and finish it before starting the next."
	default:
		return summary + " Continue with the item in progress and mark it completed as soon as it is done."
	}
}
