package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// SpawnerArg is the hidden subcommand of a session's spawner: the re-exec
// (ExecArg) restricts itself and then executes `retrace __sandbox-spawner`,
// which starts the session's tool processes on request. Executing the
// binary again, rather than serving from the restricted thread, makes
// every thread of the spawner restricted: Landlock, no_new_privs and the
// capability drop hold per thread, and a Go program runs many.
const SpawnerArg = "__sandbox-spawner"

// spawnerFD is the spawner's end of its socket, as the re-exec passes it.
const spawnerFD = 3

// maxMessage bounds a request or a reply: the argument and environment
// strings of a process cannot exceed the kernel's ARG_MAX anyway.
const maxMessage = 16 << 20

// request asks the spawner to start a process; its standard files travel
// beside it as SCM_RIGHTS.
type request struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Pgid int      `json:"pgid"`
}

// reply is the spawner's answer: the pid of the started process, or why
// it could not start. The first reply, to no request, says it is ready.
type reply struct {
	Pid   int    `json:"pid"`
	Error string `json:"error,omitempty"`
	Errno int    `json:"errno,omitempty"`
}

// spawner is retrace's side of a session's spawner: the socket to it and
// what its mount namespace was made from.
type spawner struct {
	fd     int
	cmd    *exec.Cmd
	done   chan struct{} // closed when the spawner has exited
	key    string
	stderr *cappedBuffer
}

// spawn starts argv through the session's spawner, starting the spawner
// first when there is none, when it died (a command may kill it: every
// process of the session shares its Landlock domain), or when a path its
// mount namespace was made from changed since (mountKey). A request the
// spawner may have received is never sent twice: if it dies after the
// request went out, the call fails.
func (s *Sandbox) spawn(c Command, env []string) (*os.Process, error) {
	stdin, stdout, stderr, closeNull, err := stdFiles(c)
	if err != nil {
		return nil, err
	}
	defer closeNull()
	req := request{Argv: c.Argv, Env: env, Dir: c.Dir, Pgid: c.Pgid}
	s.spawnMu.Lock()
	defer s.spawnMu.Unlock()
	key := s.mountKey()
	for attempt := 0; ; attempt++ {
		if s.sp != nil && (s.sp.exited() || s.sp.key != key) {
			s.sp.stop()
			s.sp = nil
		}
		if s.sp == nil {
			sp, err := s.startSpawner(key)
			if err != nil {
				return nil, err
			}
			s.sp = sp
		}
		pid, sent, err := s.sp.request(req, []int{int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd())})
		runtime.KeepAlive(stdin)
		runtime.KeepAlive(stdout)
		runtime.KeepAlive(stderr)
		var refused *startError
		switch {
		case err == nil:
			// The process is this process's child (CLONE_PARENT) and not
			// reaped, so its pid cannot have been reused.
			return os.FindProcess(pid)
		case errors.As(err, &refused):
			return nil, err
		}
		s.sp.stop()
		s.sp = nil
		if sent || attempt > 0 {
			return nil, fmt.Errorf("sandbox: the session's spawner failed: %w", err)
		}
	}
}

// startError is the spawner's report that a process could not start.
type startError struct {
	msg   string
	errno syscall.Errno
}

// Error says why, and for EAGAIN that the session's process limit is the
// cause: the spawner runs under it, like every process of the session.
func (e *startError) Error() string {
	if e.errno == syscall.EAGAIN {
		return e.msg + " (the session's process limit is reached: processes its earlier commands started are still running)"
	}
	return e.msg
}

// Unwrap returns the errno of the failed fork or exec, if any.
func (e *startError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// stdFiles returns the command's standard files, /dev/null for those it
// leaves nil, and a function that closes what it opened.
func stdFiles(c Command) (in, out, errf *os.File, closeNull func(), err error) {
	var null *os.File
	closeNull = func() {
		if null != nil {
			null.Close()
		}
	}
	pick := func(f *os.File) (*os.File, error) {
		if f != nil {
			return f, nil
		}
		if null == nil {
			null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0)
		}
		return null, err
	}
	if in, err = pick(c.Stdin); err != nil {
		return
	}
	if out, err = pick(c.Stdout); err != nil {
		return
	}
	errf, err = pick(c.Stderr)
	return
}

// mountKey names the state of the paths the spawner's mount namespace is
// made from (the writable directories bound onto themselves, the
// protected paths kept read-only): each one's device and inode, or its
// absence. A bind mount holds the directory it was made of; when a path
// is created, removed or replaced later (`git init` makes .git/hooks, a
// test recreates the workspace), the key changes and the next process
// gets a new spawner with a namespace made from what is there now, as
// the per-call re-exec used to make for every process.
func (s *Sandbox) mountKey() string {
	if !s.mounts {
		return ""
	}
	var b []byte
	for _, p := range append(s.Writable(), s.protected...) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			b = append(b, '-', ';')
			continue
		}
		b = strconv.AppendUint(b, st.Dev, 16)
		b = append(b, ':')
		b = strconv.AppendUint(b, st.Ino, 16)
		b = append(b, ';')
	}
	return string(b)
}

// startSpawner starts the session's spawner through the re-exec and waits
// until it says it is ready. The spawner joins the session's cgroups,
// namespaces and Landlock domain as every process of the session did with
// the per-call re-exec. It runs in a process group of its own (a Ctrl-C
// at the terminal is not for it), and dies with retrace: it exits when
// its socket reaches end of file, and its parent-death signal is SIGKILL
// (the goroutine that starts it stays on its thread until it exits,
// golang/go#27505).
func (s *Sandbox) startSpawner(key string) (*spawner, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: make the spawner's socket: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "spawner-socket")
	defer theirs.Close()
	sp := &spawner{fd: fds[0], done: make(chan struct{}), key: key, stderr: &cappedBuffer{max: 4096}}
	cmd := exec.Command(selfExe)
	cmd.Args = []string{"retrace", ExecArg, s.planFile, "--", selfExe, SpawnerArg}
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = sp.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.wrapNamespaces(cmd)
	sp.cmd = cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
		close(sp.done)
	}()
	if err := <-started; err != nil {
		unix.Close(sp.fd)
		return nil, fmt.Errorf("sandbox: start the session's spawner: %w", err)
	}
	theirs.Close()
	var ready reply
	if err := readMessage(sp.fd, &ready, nil); err != nil {
		sp.stop()
		return nil, fmt.Errorf("sandbox: the session's spawner did not start: %s", sp.why(err))
	}
	return sp, nil
}

// why says why the spawner failed: what it printed, else err.
func (sp *spawner) why(err error) string {
	<-sp.done
	if msg := sp.stderr.String(); msg != "" {
		return msg
	}
	return err.Error()
}

// exited reports whether the spawner has exited.
func (sp *spawner) exited() bool {
	select {
	case <-sp.done:
		return true
	default:
		return false
	}
}

// request sends one request with its files and reads the reply. sent
// reports whether the whole request went out, after which the spawner may
// have started the process.
func (sp *spawner) request(req request, files []int) (pid int, sent bool, err error) {
	if err := writeMessage(sp.fd, req, files); err != nil {
		return 0, false, err
	}
	var r reply
	if err := readMessage(sp.fd, &r, nil); err != nil {
		return 0, true, err
	}
	if r.Error != "" {
		return 0, true, &startError{msg: r.Error, errno: syscall.Errno(r.Errno)}
	}
	if r.Pid <= 0 {
		return 0, true, fmt.Errorf("the spawner answered pid %d", r.Pid)
	}
	return r.Pid, true, nil
}

// stop ends the spawner: its socket closes, and it is killed and reaped.
// The processes it started are this process's children and go on.
func (sp *spawner) stop() {
	if sp == nil {
		return
	}
	_ = unix.Shutdown(sp.fd, unix.SHUT_RDWR)
	unix.Close(sp.fd)
	if sp.cmd.Process != nil {
		_ = sp.cmd.Process.Kill()
	}
	<-sp.done
}

// writeMessage writes v as a length-prefixed JSON message, with files
// attached to its first byte.
func writeMessage(fd int, v any, files []int) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > maxMessage {
		return fmt.Errorf("the message is %d bytes, above %d", len(body), maxMessage)
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	msg = append(msg, body...)
	var oob []byte
	if len(files) > 0 {
		oob = unix.UnixRights(files...)
	}
	for len(msg) > 0 {
		n, err := unix.SendmsgN(fd, msg, oob, nil, unix.MSG_NOSIGNAL)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		msg, oob = msg[n:], nil
	}
	return nil
}

// readMessage reads one message into v. The files that came with it are
// appended to *files (close-on-exec); with files nil any are closed.
func readMessage(fd int, v any, files *[]int) error {
	var head [4]byte
	if err := readFull(fd, head[:], files); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxMessage {
		return fmt.Errorf("a message of %d bytes, above %d", n, maxMessage)
	}
	body := make([]byte, n)
	if err := readFull(fd, body, files); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// readFull fills b from the socket, collecting passed files.
func readFull(fd int, b []byte, files *[]int) error {
	oob := make([]byte, unix.CmsgSpace(16*4))
	for len(b) > 0 {
		n, oobn, _, _, err := unix.Recvmsg(fd, b, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return err
			}
			for _, m := range msgs {
				fds, err := unix.ParseUnixRights(&m)
				if err != nil {
					continue
				}
				if files == nil {
					for _, f := range fds {
						unix.Close(f)
					}
					continue
				}
				*files = append(*files, fds...)
			}
		}
		if n == 0 {
			return io.EOF
		}
		b = b[n:]
	}
	return nil
}

// serve is the spawner: it reads requests from its socket and starts each
// process with fork and exec, until the socket reaches end of file
// (retrace closed it or exited). Every process inherits what restricts
// the spawner (cgroups, namespaces, Landlock domain, no_new_privs, no
// capabilities, limits), and is started with CLONE_PARENT, so that it is
// retrace's child: retrace waits for it and reads its exit status from
// the kernel, and a spawner that dies leaves the running processes alone.
// The spawner is not dumpable, so a command of the session cannot trace
// it or read its memory.
func serve(fd int) int {
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		fmt.Fprintln(os.Stderr, "retrace sandbox: the spawner runs only inside the sandbox's re-exec")
		return ExitSetup
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "retrace sandbox: make the spawner not dumpable: %v\n", err)
		return ExitSetup
	}
	unix.CloseOnExec(fd)
	if err := writeMessage(fd, reply{Pid: os.Getpid()}, nil); err != nil {
		return 0
	}
	for {
		var req request
		var files []int
		if err := readMessage(fd, &req, &files); err != nil {
			for _, f := range files {
				unix.Close(f)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, unix.ECONNRESET) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "retrace sandbox: spawner: %v\n", err)
			return ExitSetup
		}
		done := make(chan reply, 1)
		go fork(req, files, done)
		r := <-done
		for _, f := range files {
			unix.Close(f)
		}
		if err := writeMessage(fd, r, nil); err != nil {
			return 0
		}
	}
}

// fork starts one requested process from a thread of its own that it
// first puts into a new Landlock domain nested in the spawner's (from ABI
// 6, where Landlock scopes signals). The process, and all it starts, may
// then signal only its own call's processes, as when each call restricted
// itself: not the spawner, whose main thread stays in the outer domain,
// nor another call's background processes, so `kill -9 -1` or `pkill .`
// in a command reaches no further than before. The goroutine ends with
// its thread locked, so the Go runtime ends the thread with it and no
// other goroutine runs in that domain; new threads are started from
// threads in the spawner's own domain.
func fork(req request, files []int, done chan<- reply) {
	runtime.LockOSThread()
	if err := nestDomain(); err != nil {
		done <- reply{Error: "sandbox: " + err.Error()}
		return
	}
	done <- start(req, files)
}

// nestDomain puts this thread into a Landlock domain of its own that
// scopes signals, nested in the one it is in; before ABI 6 it does
// nothing (and a command can kill the spawner, which is then restarted).
// The domain restricts nothing else: the spawner's applies all the same.
func nestDomain() error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < scopeABI {
		return nil
	}
	fd, err := llsys.LandlockCreateRuleset(&llsys.RulesetAttr{Scoped: llsys.ScopeSignal}, 0)
	if err != nil {
		return fmt.Errorf("make the call's Landlock ruleset: %w", err)
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("enforce the call's Landlock ruleset: %w", err)
	}
	return nil
}

// scopeABI is the first Landlock ABI that scopes signals.
const scopeABI = 6

// start forks and executes one requested process. When the exec itself
// fails (a missing program or directory), the child has already exited
// as retrace's child, and stays a zombie of retrace's, since nothing
// tells retrace its pid: one per failed start, which for the bash tool
// (/bin/bash in the workspace) means a broken installation.
func start(req request, files []int) reply {
	if len(files) != 3 {
		return reply{Error: fmt.Sprintf("sandbox: %d standard files came with the request, want 3", len(files))}
	}
	if len(req.Argv) == 0 {
		return reply{Error: "sandbox: an empty command"}
	}
	attr := &syscall.ProcAttr{
		Dir:   req.Dir,
		Env:   req.Env,
		Files: []uintptr{uintptr(files[0]), uintptr(files[1]), uintptr(files[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pgid: req.Pgid, Cloneflags: unix.CLONE_PARENT},
	}
	pid, err := syscall.ForkExec(req.Argv[0], req.Argv, attr)
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		return reply{Error: fmt.Sprintf("sandbox: start %s: %v", req.Argv[0], err), Errno: int(errno)}
	}
	return reply{Pid: pid}
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
