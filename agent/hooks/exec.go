package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/procgroup"
)

// stdinPayload is the JSON a hook reads on stdin, in Claude Code's protocol.
type stdinPayload struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolResponse  *toolResponse   `json:"tool_response,omitempty"`
}

type toolResponse struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// toolInputJSON returns input in a form that can be embedded in the stdin
// JSON: the input itself when it is valid JSON, otherwise its text as a JSON
// string, so a malformed model input still reaches the hook instead of
// failing the run.
func toolInputJSON(input json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(input)) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(input) {
		return input
	}
	s, _ := json.Marshal(string(input))
	return s
}

// execStatus is how a hook process ended.
type execStatus int

const (
	// exited: the process ran to its own end; exitCode is meaningful.
	exited execStatus = iota
	// timedOut: the hook's own timeout killed it.
	timedOut
	// aborted: the caller's context ended first.
	aborted
	// failed: it could not be started, or Wait failed for another reason.
	failed
)

// execResult is one finished hook process.
type execResult struct {
	status   execStatus
	exitCode int
	stdout   []byte
	// stdoutOverflow is set when the hook printed more than MaxStdout.
	stdoutOverflow bool
	stderr         []byte
	duration       time.Duration
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest,
// while still reporting success, so a chatty hook is never blocked on a full
// pipe nor allowed to grow our memory.
type cappedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room < len(p) {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

// pipeGrace is how long a hook's stdout and stderr may stay open after the
// hook itself exited, e.g. held by a background child it forgot to detach.
// After that the rest of its process group is killed and the pipes closed,
// so such a child can delay a call by at most this much.
func pipeGrace(timeout time.Duration) time.Duration {
	return min(time.Second, timeout)
}

// execHook runs one hook process with payload on stdin.
func (r *Runner) execHook(ctx context.Context, h *hook, call Call, payload []byte) execResult {
	hctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()

	cmd := exec.CommandContext(hctx, "/bin/bash", "-c", h.command)
	cmd.Dir = r.workspace
	cmd.Env = append(cmd.Environ(),
		"RETRACE_SESSION_ID="+call.SessionID,
		"RETRACE_TOOL_NAME="+call.Tool,
		"RETRACE_PROJECT_DIR="+r.workspace,
		"CLAUDE_PROJECT_DIR="+r.workspace,
	)
	cmd.Stdin = bytes.NewReader(payload)
	// The hook runs in its own process group so that a timeout kills
	// everything it started, not just bash, and so does retrace dying.
	group, err := procgroup.New()
	if err != nil {
		return execResult{status: failed}
	}
	defer group.Release()
	group.Join(cmd)
	cmd.Cancel = group.Cancel
	// Bounds the wait for exec's stdin copy when the hook exited without
	// reading a large payload while a child of it still holds stdin open.
	cmd.WaitDelay = pipeGrace(h.timeout)

	// Our own pipes rather than exec's copying goroutines: we must know
	// when the hook exited but something it started still holds its
	// output open, to end that wait without guessing.
	stdout := &cappedBuffer{limit: MaxStdout}
	stderr := &cappedBuffer{limit: maxStderr}
	outR, outW, err := os.Pipe()
	if err != nil {
		return execResult{status: failed}
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return execResult{status: failed}
	}
	defer errR.Close()
	cmd.Stdout = outW
	cmd.Stderr = errW

	start := time.Now()
	unlock := procgroup.WithDeathSignal(cmd)
	defer unlock() // after Wait, below
	err = cmd.Start()
	// The child has its own copies now; ours would keep the pipes open.
	outW.Close()
	errW.Close()
	if err != nil {
		return execResult{status: failed, duration: time.Since(start)}
	}
	drained := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = io.Copy(stdout, outR) }()
		go func() { defer wg.Done(); _, _ = io.Copy(stderr, errR) }()
		wg.Wait()
		close(drained)
	}()

	waitErr := cmd.Wait()
	grace := time.NewTimer(pipeGrace(h.timeout))
	select {
	case <-drained:
		grace.Stop()
	case <-grace.C:
		group.Kill()
		// Closing our ends ends the copies even if a process outside the
		// group (one that called setsid) still holds the pipes.
		outR.Close()
		errR.Close()
		<-drained
	}

	if errors.Is(waitErr, exec.ErrWaitDelay) {
		// Something of the hook's still held its stdin: same treatment as
		// holding stdout.
		group.Kill()
	}

	res := execResult{
		duration:       time.Since(start),
		stdout:         stdout.buf.Bytes(),
		stdoutOverflow: stdout.overflow,
		stderr:         stderr.buf.Bytes(),
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr != nil && hctx.Err() != nil:
		if ctx.Err() != nil {
			res.status = aborted
		} else {
			res.status = timedOut
		}
	case waitErr == nil, errors.Is(waitErr, exec.ErrWaitDelay):
		res.status = exited
		res.exitCode = cmd.ProcessState.ExitCode()
	case errors.As(waitErr, &exitErr):
		res.status = exited
		res.exitCode = exitErr.ExitCode()
	default:
		res.status = failed
	}
	return res
}
