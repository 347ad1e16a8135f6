package sandbox_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/agent/tools"
)

// corpusTreeEnv carries the throwaway tree to the test binary re-executed
// inside the throwaway namespaces.
const corpusTreeEnv = "RETRACE_SANDBOX_CORPUS_TREE"

// outerPidNSEnv carries the outer pid namespace, so that the inner run
// can check it is in another one before it runs anything.
const outerPidNSEnv = "RETRACE_SANDBOX_CORPUS_OUTER_PIDNS"

// excluded are the dangerous corpus classes that are not run, with why.
var excluded = map[string]string{
	// reboot, halt and systemctl poweroff ask init over a Unix socket
	// (systemd's, or D-Bus). Landlock refuses connections to pathname Unix
	// sockets only from ABI 9, a read-only mount does not stop them, and
	// a pid namespace does not hide the real init's socket: a sandbox
	// failure here would stop the machine running the tests.
	"shutdown": "asks the real init over a Unix socket, which neither Landlock below ABI 9 nor a read-only mount refuses",
}

// TestDangerousCorpusInSandbox runs the dangerous rows of the shell
// analysis's corpus for real, with no permission chain at all (stronger
// than bypass mode), through the bash tool inside the sandbox, and checks
// that nothing outside the workspace changed: a tree hash of a throwaway
// home (with startup files and credentials) and of a sibling directory,
// before and after every row. It also runs every read-only row sandboxed
// and unsandboxed and checks that they end the same way.
//
// The sandbox is the thing under test, so it is not trusted to protect the
// machine: everything runs in a re-execution of this test binary inside
// throwaway mount, pid and network namespaces (unshare -m -p -n -f
// --mount-proc) where every mount but the throwaway tree is read-only, /dev
// is a tmpfs holding only null, zero, full, random, urandom and tty, the
// processes of the machine are not visible, and the only network
// interface is a loopback that is down, so no connection can leave it.
// HOME and the rows' home paths (/root, ~, $HOME) point into the tree.
// The shutdown rows are excluded (see excluded); fork bombs run only when
// the sandbox's pids cgroup bounds them. It needs root, unshare and
// Landlock, and skips otherwise.
func TestDangerousCorpusInSandbox(t *testing.T) {
	if tree := os.Getenv(corpusTreeEnv); tree != "" {
		inner(t, tree)
		return
	}
	if testing.Short() {
		t.Skip("runs the dangerous corpus; not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for the throwaway namespaces")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare")
	}
	if out, err := exec.Command(unshare, "-m", "-p", "-n", "-f", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make throwaway namespaces here (%v): %s", err, out)
	}
	box, err := sandbox.New(sandbox.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	unavailable := box.Unavailable()
	box.Close()
	if unavailable != nil {
		t.Skipf("no sandbox here: %v", unavailable)
	}
	tree := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	outerNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("cannot read the pid namespace: %v", err)
	}
	// bash is the namespace's init, so that the processes the rows orphan
	// (a fork bomb leaves thousands) are reaped as the real init reaps
	// them; the test binary is its child.
	cmd := exec.CommandContext(ctx, unshare, "-m", "-p", "-n", "-f", "--mount-proc", "--kill-child",
		"/bin/bash", "-c", `"$@"; exit $?`, "init",
		os.Args[0], "-test.run=^TestDangerousCorpusInSandbox$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), corpusTreeEnv+"="+tree, "TMPDIR="+filepath.Join(tree, "tmp"), "HOME="+filepath.Join(tree, "home"),
		outerPidNSEnv+"="+outerNS)
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespaces:\n%s", out)
	if err != nil {
		t.Fatalf("the run inside the namespaces failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestDangerousCorpusInSandbox") {
		t.Fatal("the run inside the namespaces did not pass")
	}
}

// inner is the test inside the namespaces.
func inner(t *testing.T, tree string) {
	if ns, err := os.Readlink("/proc/self/ns/pid"); err != nil || ns == os.Getenv(outerPidNSEnv) {
		t.Fatalf("not in a pid namespace of its own (%s, %v): refusing to run the dangerous corpus", ns, err)
	}
	home, ws, sibling := filepath.Join(tree, "home"), filepath.Join(tree, "ws"), filepath.Join(tree, "sibling")
	for _, d := range []string{home, ws, sibling, filepath.Join(tree, "tmp")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	makeHome(t, home)
	makeFiles(t, sibling, map[string]string{"data.txt": "sibling\n", "keep/deep.txt": "deep\n", ".env": "TOKEN=sibling\n"})
	box, err := sandbox.New(sandbox.Options{Workspace: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	isolate(t, tree)

	before := treeHash(t, home) + treeHash(t, sibling)
	rows := loadCorpus(t)
	var runFor func(box *sandbox.Sandbox, command string, timeoutMS int) tools.Result
	run := func(box *sandbox.Sandbox, command string) tools.Result {
		return runFor(box, command, 5000)
	}
	runFor = func(box *sandbox.Sandbox, command string, timeoutMS int) tools.Result {
		resetWorkspace(t, ws, home)
		env, err := tools.NewEnv(ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		env.SetSandbox(box)
		in, _ := json.Marshal(map[string]any{"command": command, "timeout": timeoutMS})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := tools.BashTool{}.Run(ctx, env, in)
		if err != nil {
			res.ErrorCode = "error: " + err.Error()
		}
		return res
	}
	// The check must be able to fail: unsandboxed, a write into the home
	// directory and one into the sibling are seen.
	for _, probe := range []string{"echo x >> ~/.bashrc", "touch " + sibling + "/new"} {
		run(nil, probe)
		if treeHash(t, home)+treeHash(t, sibling) == before {
			t.Fatalf("the check did not see %q change anything", probe)
		}
		makeHome(t, home)
		must(t, os.RemoveAll(filepath.Join(sibling, "new")))
	}
	// The undoing rewrote files, so their times changed: a new baseline.
	before = treeHash(t, home) + treeHash(t, sibling)
	pidsBounded := strings.Contains(box.Info().Limits, "pids cgroup")
	ran, skipped := 0, map[string]int{}
	var bombs []corpusRow
	for _, r := range rows {
		if r.Label != "dangerous" {
			continue
		}
		if why, ok := excluded[r.Class]; ok {
			skipped[r.Class+": "+why]++
			continue
		}
		if r.Class == "fork_bomb" {
			if !pidsBounded {
				skipped["fork_bomb: no pids cgroup bounds it here ("+box.Info().Limits+")"]++
			} else {
				bombs = append(bombs, r)
			}
			continue
		}
		command := strings.ReplaceAll(r.Cmd, "/root", home)
		res := run(box, command)
		ran++
		if after := treeHash(t, home) + treeHash(t, sibling); after != before {
			t.Errorf("%s row %q changed something outside the workspace (exit %s):\n%s", r.Class, r.Cmd, res.ErrorCode, clip(res.Output))
			makeHome(t, home)
			must(t, os.RemoveAll(sibling))
			makeFiles(t, sibling, map[string]string{"data.txt": "sibling\n", "keep/deep.txt": "deep\n", ".env": "TOKEN=sibling\n"})
			before = treeHash(t, home) + treeHash(t, sibling)
		}
	}
	// Each fork bomb runs last, in a session of its own: it exhausts that
	// session's process limit and no more, so a command of another session
	// still starts while and after it runs.
	for _, r := range bombs {
		bombBox, err := sandbox.New(sandbox.Options{Workspace: ws, Home: home})
		must(t, err)
		res := run(bombBox, r.Cmd)
		ran++
		// The bomb's processes go on spinning until its session ends: the
		// other session's command gets a fair share of the CPU, not a
		// thousandth, but the machine is shared, so it is given time.
		if after := runFor(box, "echo still-here", 30000); strings.TrimSpace(after.Output) != "still-here" {
			t.Errorf("after the fork bomb %q (exit %s), another session's command did not run: %s %q", r.Cmd, res.ErrorCode, after.ErrorCode, clip(after.Output))
		}
		bombBox.Close()
		if after := treeHash(t, home) + treeHash(t, sibling); after != before {
			t.Errorf("fork bomb %q changed something outside the workspace", r.Cmd)
		}
	}
	t.Logf("ran %d dangerous rows in the sandbox; excluded: %v", ran, skipped)
	if ran < 150 {
		t.Errorf("only %d dangerous rows ran; the corpus has more", ran)
	}

	// The read-only rows end the same way inside the sandbox as outside.
	same, differ := 0, 0
	for _, r := range rows {
		if r.Label != "read_only" {
			continue
		}
		plain, boxed := run(nil, r.Cmd), run(box, r.Cmd)
		if plain.IsError != boxed.IsError || plain.ErrorCode != boxed.ErrorCode {
			differ++
			t.Errorf("read-only row %q: unsandboxed %q, sandboxed %q:\n%s", r.Cmd, plain.ErrorCode, boxed.ErrorCode, clip(boxed.Output))
			continue
		}
		same++
	}
	t.Logf("read-only rows: %d end the same way in the sandbox, %d differ", same, differ)
}

// isolate makes every mount but the tree read-only and /dev a tmpfs with
// the harmless devices, inside this process's mount namespace, and checks
// that it worked before any row runs.
func isolate(t *testing.T, tree string) {
	must(t, unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""))
	dev := filepath.Join(tree, "dev")
	must(t, os.MkdirAll(dev, 0o755))
	must(t, unix.Mount("tmpfs", dev, "tmpfs", 0, "mode=755"))
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		p := filepath.Join(dev, name)
		must(t, os.WriteFile(p, nil, 0o666))
		must(t, unix.Mount("/dev/"+name, p, "", unix.MS_BIND, ""))
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		must(t, os.Symlink(target, filepath.Join(dev, name)))
	}
	must(t, unix.Mount(dev, "/dev", "", unix.MS_MOVE, ""))
	must(t, unix.Mount(tree, tree, "", unix.MS_BIND|unix.MS_REC, ""))
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	must(t, unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro))
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	must(t, unix.MountSetattr(unix.AT_FDCWD, tree, unix.AT_RECURSIVE, &rw))
	// The sandbox's cgroups must stay joinable; Landlock and the dropped
	// capabilities keep the commands from writing there.
	_ = unix.MountSetattr(unix.AT_FDCWD, "/sys/fs/cgroup", unix.AT_RECURSIVE, &rw)
	if err := os.WriteFile("/etc/retrace-corpus-probe", nil, 0o644); err == nil {
		_ = os.Remove("/etc/retrace-corpus-probe")
		t.Fatal("/etc is writable inside the namespaces: refusing to run the dangerous corpus")
	}
	if _, err := os.Stat("/dev/sda"); err == nil {
		t.Fatal("/dev/sda is visible inside the namespaces: refusing to run the dangerous corpus")
	}
	b, err := os.ReadFile("/proc/net/dev")
	must(t, err)
	for _, line := range strings.Split(string(b), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name != "lo" {
			t.Fatalf("network interface %s is visible inside the namespaces: refusing to run the dangerous corpus", name)
		}
	}
}

func makeHome(t *testing.T, home string) {
	makeFiles(t, home, map[string]string{
		".bashrc": "# rc\n", ".profile": "# profile\n", ".zshrc": "# zsh\n", ".gitconfig": "[user]\n\tname = t\n\temail = t@example.com\n",
		".ssh/id_rsa": "PRIVATE KEY\n", ".ssh/id_ed25519": "PRIVATE KEY\n", ".ssh/authorized_keys": "ssh-ed25519 AAAA\n",
		".aws/credentials": "[default]\naws_secret_access_key=x\n", ".netrc": "machine h password p\n", ".env": "TOKEN=home\n",
	})
}

// resetWorkspace gives each row the same workspace, the fixture the
// read-only rows name (see agent/shell's corpus tests).
func resetWorkspace(t *testing.T, ws, home string) {
	must(t, os.RemoveAll(ws))
	makeFiles(t, ws, map[string]string{
		"a.txt": "hello world\nfoo 3\nbar 5\n", "b.txt": "hello there\nfoo 4\n", "sub/c.txt": "c\n",
		"data.json": `{"name":"x","items":[1,2]}`, "b64.txt": "aGVsbG8K\n", "a.go": "package a\n", "-weird": "weird\n",
		"x.img": "img\n", "x": "x\n", "id_rsa": "k\n", "server.pem": "pem\n", ".env": "TOKEN=ws\n", "layout": "\n",
	})
	if git, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-qm", "init"}} {
			c := exec.Command(git, args...)
			c.Dir = ws
			c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
	}
}

func makeFiles(t *testing.T, dir string, files map[string]string) {
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// treeHash hashes every entry under root: path, type, mode, size and
// content, so a change of any of them is seen.
func treeHash(t *testing.T, root string) string {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s %d %d", rel, info.Mode(), info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", root, err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

type corpusRow struct {
	Label, Class, Reason, Cmd string
}

func loadCorpus(t *testing.T) []corpusRow {
	f, err := os.Open(filepath.Join("..", "shell", "testdata", "corpus.jsonl"))
	must(t, err)
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var r corpusRow
		must(t, json.Unmarshal(sc.Bytes(), &r))
		rows = append(rows, r)
	}
	must(t, sc.Err())
	if !slices.ContainsFunc(rows, func(r corpusRow) bool { return r.Label == "dangerous" }) {
		t.Fatal("the corpus has no dangerous rows")
	}
	return rows
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
