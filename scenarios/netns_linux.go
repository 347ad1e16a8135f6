//go:build linux

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"
)

// netnsEnv, when set in a process's environment, makes that process the
// helper that an agent run starts inside its own network namespace (see
// isolatedCommand): the value is the Unix socket of the mock LLM outside.
// A network namespace of its own has only a loopback device, so the
// agent can reach nothing but what listens inside it; the helper listens
// there on agentMockAddr and carries each connection to the mock's Unix
// socket, which a file path makes reachable across namespaces.
const netnsEnv = "RETRACE_INTERNAL_AGENT_NETNS"

// agentMockAddr is where the agent finds the mock inside its namespace;
// every port of a fresh namespace is free.
const agentMockAddr = "127.0.0.1:18080"

// init turns a re-executed retrace (any binary that links this package:
// retrace itself or a test binary) into the namespace helper before its
// main runs, as re-exec helpers do: the helper must be this very binary,
// since nothing else can be assumed to be installed inside the namespace.
func init() {
	sock := os.Getenv(netnsEnv)
	if sock == "" {
		return
	}
	os.Exit(netnsHelper(sock, os.Args[1:]))
}

// netnsHelper brings the loopback device up, forwards agentMockAddr to
// the mock's socket, runs the agent command and returns its exit code
// (125 when the helper itself failed, with the reason on stderr).
func netnsHelper(sock string, command []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "retrace agent namespace: %v\n", err)
		return 125
	}
	if len(command) == 0 {
		return fail(errors.New("no agent command"))
	}
	if err := loopbackUp(); err != nil {
		return fail(fmt.Errorf("bring up the loopback device: %w", err))
	}
	ln, err := net.Listen("tcp", agentMockAddr)
	if err != nil {
		return fail(err)
	}
	go forward(ln, sock)
	os.Unsetenv(netnsEnv)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The agent dies with the helper, whoever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		return fail(err)
	}
	return 0
}

// forward carries every connection accepted on ln to the Unix socket sock.
func forward(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(up, c)
				if u, ok := up.(*net.UnixConn); ok {
					_ = u.CloseWrite()
				}
			}()
			_, _ = io.Copy(c, up)
			if t, ok := c.(*net.TCPConn); ok {
				_ = t.CloseWrite()
			}
			wg.Wait()
		}()
	}
}

// ifreqFlags is the kernel's struct ifreq as SIOCGIFFLAGS and
// SIOCSIFFLAGS read it: a name and the flags, padded to its full size.
type ifreqFlags struct {
	name  [16]byte
	flags uint16
	_     [22]byte
}

// loopbackUp sets the IFF_UP flag of lo, as `ip link set lo up` does,
// without depending on that command.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var req ifreqFlags
	copy(req.name[:], "lo")
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return errno
	}
	req.flags |= syscall.IFF_UP
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return errno
	}
	return nil
}

// isolationOf is how isolatedCommand learns whether a namespace can be
// had; a test replaces it to see a platform without one.
var isolationOf = isolation

var (
	isolationOnce sync.Once
	isolationArgs []string
	isolationWhy  string
)

// isolation returns the unshare arguments that give a process a network
// namespace of its own here (-n as root, -rn in a user namespace
// otherwise), or why none can be had.
func isolation() ([]string, string) {
	isolationOnce.Do(func() {
		if _, err := exec.LookPath("unshare"); err != nil {
			isolationWhy = "the unshare command is not installed (util-linux)"
			return
		}
		var whys []string
		for _, args := range [][]string{{"-n"}, {"-rn"}} {
			out, err := exec.Command("unshare", append(args, "true")...).CombinedOutput()
			if err == nil {
				isolationArgs = args
				return
			}
			whys = append(whys, fmt.Sprintf("unshare %s: %v %s", args[0], err, out))
		}
		isolationWhy = fmt.Sprintf("no network namespace is permitted here (%v)", whys)
	})
	return isolationArgs, isolationWhy
}

// isolatedCommand returns the command that runs command in a network
// namespace of its own with the mock at agentMockAddr, carried to the
// Unix socket sock; false when the platform gives no namespace (why says
// so).
func isolatedCommand(ctx context.Context, sock string, command []string) (*exec.Cmd, bool, string) {
	args, why := isolationOf()
	if args == nil {
		return nil, false, why
	}
	self, err := os.Executable()
	if err != nil {
		return nil, false, fmt.Sprintf("cannot find retrace's own binary to start the namespace helper: %v", err)
	}
	cmd := exec.CommandContext(ctx, "unshare", append(append(args, self), command...)...)
	cmd.Env = append(cmd.Env, netnsEnv+"="+sock)
	return cmd, true, ""
}

// ownProcessGroup puts cmd in a process group of its own, and makes its
// cancellation kill the whole group: an agent's tools must not outlive
// the run.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
