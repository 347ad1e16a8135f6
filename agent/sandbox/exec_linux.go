package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// selfExe is the program a sandboxed process is started as: the running
// binary itself, whatever its name (retrace, or a test binary).
const selfExe = "/proc/self/exe"

// init turns the process into the re-exec when it was started as one.
// It runs before main and before any test, so every binary that links
// this package (retrace and the test binaries that run tools) can be the
// re-exec target without wiring of its own.
func init() {
	if len(os.Args) > 4 && os.Args[1] == ExecArg && os.Args[3] == "--" {
		err := restrictAndExec(os.Args[2], os.Args[4:])
		fmt.Fprintf(os.Stderr, "retrace sandbox: %v\n", err)
		os.Exit(ExitSetup)
	}
	if len(os.Args) == 2 && os.Args[1] == SpawnerArg {
		os.Exit(serve(spawnerFD))
	}
}

// ExitSetup is the exit status of a re-exec that could not restrict
// itself or execute the command; nothing of the command ran.
const ExitSetup = 125

// landlockABI returns the kernel's Landlock ABI version.
func landlockABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return 0, fmt.Errorf("Landlock is not enabled in this kernel (landlock_create_ruleset: %v; it needs Linux 5.13 or later with lsm=landlock)", err)
		}
		return 0, fmt.Errorf("the Landlock ABI version cannot be read: %v", err)
	}
	return v, nil
}

// netABI is the first Landlock ABI that restricts TCP connect and bind.
const netABI = 4

// wrapNamespaces cuts the network with a network namespace of its own
// where the Landlock ABI cannot restrict TCP (before version 4).
// It gives the process a mount namespace of its own where workspace paths
// are to be made read-only (plan.Protect).
func (s *Sandbox) wrapNamespaces(cmd *exec.Cmd) {
	var flags uintptr
	if !s.network && s.abi < netABI {
		flags |= syscall.CLONE_NEWNET
	}
	if s.mounts {
		flags |= syscall.CLONE_NEWNS
	}
	if flags == 0 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= flags
}

// canUnshareNet reports whether a network namespace can be made: retrace
// holds CAP_SYS_ADMIN (user namespaces are not used).
func canUnshareNet() bool { return hasSysAdmin() }

// canMount reports whether the process can make mounts in a mount
// namespace of its own: retrace holds CAP_SYS_ADMIN, as root does outside
// a container (inside one, root usually does not, and the sandbox works
// without the mount namespace).
func canMount() bool { return hasSysAdmin() }

// hasSysAdmin reports whether CAP_SYS_ADMIN is in this process's
// effective set.
func hasSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// remount makes the file system read-only in this process's mount
// namespace, which must be its own (wrapNamespaces), except the writable
// directories, and keeps the protected paths read-only within them.
// First every mount becomes private, so that nothing done here reaches
// the rest of the machine; then each writable directory and each
// protected path is bound onto itself, the whole tree is made read-only
// in one call, and the writable directories' own mounts are made
// writable again. Device files stay writable on a read-only mount.
func remount(pl plan) error {
	if !pl.ReadOnlyRoot {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	var writable []string
	for _, d := range pl.WriteDirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", d, err)
		}
		writable = append(writable, d)
	}
	for _, p := range pl.Protect {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("make the file system read-only: %w", err)
	}
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, d := range writable {
		if err := unix.MountSetattr(unix.AT_FDCWD, d, 0, &rw); err != nil {
			return fmt.Errorf("make %s writable: %w", d, err)
		}
	}
	// The working directory still lies on the mount it was entered
	// through; entering it again goes through the new ones.
	if wd, err := os.Getwd(); err == nil {
		if err := os.Chdir(wd); err != nil {
			return fmt.Errorf("enter %s again: %w", wd, err)
		}
	}
	return nil
}

// restrictAndExec is the re-exec: it applies the plan to this thread and
// executes argv. It returns only on failure. Everything it does is per
// thread and inherited across execve, so the goroutine stays locked to
// its OS thread from here on.
func restrictAndExec(planFile string, argv []string) error {
	runtime.LockOSThread()
	b, err := os.ReadFile(planFile)
	if err != nil {
		return fmt.Errorf("read the plan: %w", err)
	}
	var pl plan
	if err := json.Unmarshal(b, &pl); err != nil {
		return fmt.Errorf("decode the plan %s: %w", planFile, err)
	}
	for _, procs := range pl.Cgroups {
		// "0" is the writing process, whatever pid namespace it is in.
		if err := os.WriteFile(procs, []byte("0"), 0); err != nil {
			return fmt.Errorf("join the process limit %s: %w", procs, err)
		}
	}
	if pl.NProc > 0 {
		lim := unix.Rlimit{Cur: pl.NProc, Max: pl.NProc}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
			return fmt.Errorf("set the process limit: %w", err)
		}
	}
	if err := remount(pl); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := landlockRestrict(pl); err != nil {
		return err
	}
	return fmt.Errorf("execute %s: %w", argv[0], syscall.Exec(argv[0], argv, os.Environ()))
}

// dropCapabilities empties the bounding, ambient, inheritable, permitted
// and effective sets and locks the securebits that would give root its
// capabilities back at execve, so the command holds none even when
// retrace runs as root. Without CAP_SETPCAP (retrace is not root) the
// bounding set and securebits cannot change, and the process holds no
// capability to lose.
func dropCapabilities() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability
		}
		if err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	const secure = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7 // NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS locked off
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secure, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("lock the securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop the capabilities: %w", err)
	}
	return nil
}

// landlockRestrict restricts this thread as the plan says: file system,
// TCP (from ABI 4) and, from ABI 6, signals and abstract sockets towards
// processes outside the sandbox.
func landlockRestrict(pl plan) error {
	cfg := landlock.V7.BestEffort()
	if pl.Network {
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs(pl.ReadDirs...).IgnoreIfMissing(),
		landlock.PathAccess(llsys.AccessFSReadDir, pl.ListDirs...).IgnoreIfMissing(),
		landlock.ROFiles(pl.ReadFiles...).IgnoreIfMissing(),
		landlock.RWDirs(pl.WriteDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles(pl.WriteFiles...).IgnoreIfMissing(),
	}
	if !pl.Network {
		for _, p := range pl.Ports {
			rules = append(rules, landlock.ConnectTCP(p))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("make the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("the kernel accepted no Landlock ruleset")
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforce the Landlock ruleset: %w", err)
	}
	return nil
}
