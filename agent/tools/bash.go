package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrace-dev/retrace/agent/procgroup"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/trajectory"
)

// Limits of bash.
const (
	bashDefaultTimeout = 120_000 // ms
	bashMaxTimeout     = 600_000 // ms
	// bashWaitDelay is how long bash waits, once the shell exited (or was
	// killed), for background children to let go of the output pipe. A
	// `server &` keeps the pipe open for ever; Run must not wait for it.
	bashWaitDelay = 200 * time.Millisecond
	// bashMaxCapture bounds the output kept in memory: the first and last
	// half of it survive, so an endless `yes` cannot exhaust memory while
	// the error summary at the end is kept. It is far above ResultLimit
	// because the executor spills the whole output for the model to read
	// back.
	bashMaxCapture = 64 << 20
)

type bashInput struct {
	Command     string `json:"command" jsonschema:"minLength=1" jsonschema_description:"The bash command line to run in the workspace directory."`
	Timeout     int    `json:"timeout,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"How long the command may run, in milliseconds (default 120000, at most 600000). When it expires the command and all its child processes are killed."`
	Description string `json:"description,omitempty" jsonschema_description:"A few words saying what the command does, shown to the user, e.g. Run the unit tests."`
}

// BashTool is the bash built-in: runs a command line with /bin/bash.
type BashTool struct{}

var bashSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "bash",
		Description: "Runs a bash command line in the workspace directory and returns its stdout and stderr combined, followed by the exit status when it is not 0. " +
			"Use it for builds, tests, git and other programs. Do not use it to read, search, list, write or edit files: read, grep, glob, ls, write and edit do that better. " +
			"stdin is empty, so interactive commands fail; the command is killed with all its child processes after the timeout (default 2 minutes, at most 10). " +
			"Background processes (cmd &) may keep running, but their output after the command ends is lost.",
		Schema:      SchemaFor[bashInput](),
		ReadOnly:    false,
		Display:     trajectory.DisplayFull,
		ResultLimit: 30000,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(command succeeded with no output)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns bash's declarations.
func (BashTool) Spec() Spec { return bashSpec() }

// ConcurrencySafe reports whether this command provably changes nothing,
// as the shell analysis decides: `ls && wc -l *.go` may run in
// parallel, `cat a > b` may not. Anything it cannot decode or analyse, and
// any panic, is "not safe" (fail closed).
func (BashTool) ConcurrencySafe(input json.RawMessage) (safe bool) {
	defer func() {
		if recover() != nil {
			safe = false
		}
	}()
	in, err := decode[bashInput](input)
	if err != nil || strings.TrimSpace(in.Command) == "" {
		return false
	}
	return shell.Analyze(in.Command).ReadOnly
}

// Command returns the command line, for the permission chain; "" when the
// input cannot be decoded.
func (BashTool) Command(input json.RawMessage) string {
	in, err := decode[bashInput](input)
	if err != nil {
		return ""
	}
	return in.Command
}

// TimeoutError is the error Run returns when the command's own timeout
// fired. It unwraps to context.DeadlineExceeded, and carries the output
// printed before the kill so the caller can show it to the model.
type TimeoutError struct {
	// After is the timeout that expired.
	After time.Duration
	// Output is what the command printed before it was killed.
	Output string
}

// Error says what happened and what to do next.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the command was killed after the %s timeout; run it with a larger timeout (at most 600000 ms), "+
		"make it faster, or run it in the background with its output redirected to a file", e.After)
}

// Unwrap returns context.DeadlineExceeded, so errors.Is classifies it as a
// timeout.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Run runs the command with `/bin/bash -c` in the workspace, in its own
// process group, with empty stdin and stdout and stderr combined in the
// order written.
//
// The outcomes, which the executor classifies by them:
//   - exit status 0: a Result with the output.
//   - exit status N ≠ 0: a Result with IsError, ErrorCode "exit:N", and the
//     output followed by a line "exit status N" (a tool_error: the command
//     ran and failed).
//   - killed by a signal not sent by Run: IsError, ErrorCode "signal:NAME".
//   - the kernel cannot sandbox the process (see Env.SetSandbox): IsError,
//     ErrorCode "sandbox_unavailable", saying why and how to opt out;
//     nothing ran.
//   - the call's own timeout fired: a *TimeoutError, which errors.Is
//     context.DeadlineExceeded → failure kind timeout.
//   - ctx was done first (the user aborted, or the executor's own
//     deadline): an error wrapping ctx.Err(), i.e. context.Canceled →
//     aborted, or context.DeadlineExceeded → timeout.
//
// With either error the Result holds only the output printed before the
// kill (never IsError, never a Modify), so the caller can show it.
//
// On timeout or cancellation the whole process group is killed with
// SIGKILL, background children included, and Run returns promptly.
// Background children of a command that exits normally are left running,
// but Run does not wait for them beyond a short grace period for output.
// Every process of the group dies with retrace (see package procgroup).
// A command the analysis calls read-only, which runs without anyone's
// approval, runs with the git settings that make git run a repository's
// programs switched off (readOnlyGitConfig).
func (BashTool) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[bashInput](input)
	if err != nil {
		return invalidInput("bash", err), nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return Result{IsError: true, ErrorCode: "invalid_input", Output: "command is empty: give the command line to run."}, nil
	}
	timeoutMS := in.Timeout
	if timeoutMS <= 0 {
		timeoutMS = bashDefaultTimeout
	}
	timeoutMS = min(timeoutMS, bashMaxTimeout)
	timeout := time.Duration(timeoutMS) * time.Millisecond

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := &captureWriter{max: bashMaxCapture}
	procEnv := os.Environ()
	if shell.Analyze(in.Command).ReadOnly {
		procEnv = withReadOnlyGit(procEnv)
	}
	// The command runs in a process group of its own, tied to retrace's
	// life: cancelling kills the shell and every child, and so does
	// retrace dying, so nothing keeps changing the workspace unrecorded.
	group, err := procgroup.New()
	if err != nil {
		return Result{}, fmt.Errorf("bash: %w", err)
	}
	defer group.Release()
	// One pipe for both streams keeps stdout and stderr in the order they
	// were written; stdin is /dev/null.
	r, w, err := os.Pipe()
	if err != nil {
		group.Kill()
		return Result{}, fmt.Errorf("bash: make the output pipe: %w", err)
	}
	defer r.Close()
	// The process starts inside the session's sandbox (package sandbox);
	// where the kernel cannot sandbox, it does not start at all.
	proc, err := env.Sandbox().Start(sandbox.Command{
		Argv: []string{"/bin/bash", "-c", in.Command}, Env: procEnv, Dir: env.Workspace(),
		Stdout: w, Stderr: w, Pgid: group.ID(),
	})
	w.Close()
	if err != nil {
		group.Kill()
		if errors.Is(err, sandbox.ErrUnavailable) {
			return Result{IsError: true, ErrorCode: "sandbox_unavailable", Output: err.Error()}, nil
		}
		// bash itself could not be started: the harness is broken, not the command.
		return Result{}, fmt.Errorf("bash: start /bin/bash: %w", err)
	}
	// The shell's pid is its $$: a replay maps the recorded one to its own.
	pid := proc.Pid
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, r)
		close(copied)
	}()
	var state *os.ProcessState
	var waitErr error
	exited := make(chan struct{})
	go func() {
		state, waitErr = proc.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-runCtx.Done():
		group.Kill()
		<-exited
	}
	// Background children may hold the pipe for ever (a `server &`): wait
	// for the output only a short grace period after the shell ended.
	grace := time.NewTimer(bashWaitDelay)
	select {
	case <-copied:
	case <-grace.C:
		r.Close()
		<-copied
	}
	grace.Stop()
	if waitErr != nil {
		group.Kill()
		return Result{}, fmt.Errorf("bash: wait for /bin/bash: %w", waitErr)
	}

	// A command that finished on its own keeps its result even if a
	// deadline passed a moment later; only a failed run after the context
	// was done was killed by us.
	if !state.Success() && runCtx.Err() != nil {
		partial := Result{Output: out.String(), PID: pid}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return partial, fmt.Errorf("bash: the call was stopped: %w", ctxErr)
		}
		return partial, &TimeoutError{After: timeout, Output: partial.Output}
	}
	text := out.String()
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := signalName(ws.Signal())
		return Result{IsError: true, ErrorCode: "signal:" + name, PID: pid,
			Output: withTrailer(text, "killed by signal "+name)}, nil
	}
	if code := state.ExitCode(); code != 0 {
		return Result{IsError: true, ErrorCode: fmt.Sprintf("exit:%d", code), PID: pid,
			Output: withTrailer(text, fmt.Sprintf("exit status %d", code))}, nil
	}
	return Result{Output: text, PID: pid}, nil
}

// withTrailer appends a status line to output on a line of its own.
func withTrailer(output, line string) string {
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	return output + line
}

// signalNames are the conventional names of the signals a command can die of.
var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

func signalName(s syscall.Signal) string {
	if name, ok := signalNames[s]; ok {
		return name
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// captureWriter keeps the first and the last max/2 bytes written to it and
// counts what it dropped in between. exec writes to it from one goroutine,
// and String is called after that goroutine finished (or was abandoned
// after WaitDelay), so it locks.
type captureWriter struct {
	max int

	mu      sync.Mutex
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int
	dropped int64
}

// Write keeps what fits and always reports the whole of p written, so the
// command never sees a write error because its output was too long.
func (w *captureWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	half := w.max / 2
	if room := half - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(w.tail) < w.max-half {
			k := min(w.max-half-len(w.tail), len(p))
			w.tail = append(w.tail, p[:k]...)
			p = p[k:]
			continue
		}
		// The ring is full: overwrite its oldest bytes.
		k := min(len(w.tail)-w.tailPos, len(p))
		w.dropped += int64(k)
		copy(w.tail[w.tailPos:], p[:k])
		w.tailPos = (w.tailPos + k) % len(w.tail)
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output as valid UTF-8, with a marker where bytes
// were dropped.
func (w *captureWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	b.Write(w.head)
	if w.dropped > 0 {
		fmt.Fprintf(&b, "\n… [%d bytes of output dropped] …\n", w.dropped)
	}
	b.Write(w.tail[w.tailPos:])
	b.Write(w.tail[:w.tailPos])
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}
