package sandbox

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixture is a throwaway home with secrets, a workspace and a sibling
// directory, and a sandbox over them.
type fixture struct {
	home, ws, sibling string
	box               *Sandbox
}

func newFixture(t *testing.T, p Policy) *fixture {
	t.Helper()
	if _, err := landlockABI(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	root := t.TempDir()
	f := &fixture{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"), sibling: filepath.Join(root, "sibling")}
	for _, d := range []string{f.ws + "/.git/hooks", f.home + "/.ssh", f.home + "/.config/gcloud", f.home + "/.config/other", f.ws, f.sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, body := range map[string]string{
		f.home + "/.ssh/id_ed25519": "PRIVATE KEY", f.home + "/.netrc": "machine x password y",
		f.home + "/.bashrc": "# rc", f.home + "/.config/other/ok": "fine", f.home + "/.env.local": "TOKEN=z", f.home + "/.config/gcloud/credentials.db": "secret",
		f.sibling + "/data": "sibling", f.ws + "/a.txt": "hello", f.ws + "/.git/config": "[core]\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	box, err := New(Options{Policy: p, Workspace: f.ws, Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(box.Close)
	f.box = box
	return f
}

// run runs a bash command line in the sandbox and returns its output and
// whether it succeeded.
func (f *fixture) run(t *testing.T, command string) (string, bool) {
	t.Helper()
	return runIn(t, f.box, Command{
		Argv: []string{"/bin/bash", "--noprofile", "--norc", "-c", command},
		Dir:  f.ws,
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + f.home, "LANG=C"},
	})
}

// runIn starts c with box.Start, its stdout and stderr combined, waits
// for it and returns its output and whether it exited 0.
func runIn(t testing.TB, box *Sandbox, c Command) (string, bool) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Stdout, c.Stderr = w, w
	p, err := box.Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(out), st.Success()
}

func TestSandboxConfinesWritesAndSecrets(t *testing.T) {
	f := newFixture(t, Policy{})
	for _, c := range []struct {
		cmd  string
		want bool
	}{
		{"echo x > new.txt && cat a.txt", true},
		{"mkdir -p d/e && mv new.txt d/e/ && rm -r d", true},
		{"echo x > $TMPDIR/t && cat $TMPDIR/t", true},
		{"cat /etc/hostname /proc/self/status >/dev/null", true},
		{"cat ~/.bashrc ~/.config/other/ok", true},
		{"ls ~", true},
		{"echo pwned >> ~/.bashrc", false},
		{"rm -rf -- \"${HOME%/}\"", false},
		{"touch ../sibling/x", false},
		{"ln ~/.bashrc hl", false},
		{"cat ~/.ssh/id_ed25519", false},
		{"cat ~/.netrc", false},
		{"cat ~/.env.local", false},
		{"cat ~/.config/gcloud/credentials.db", false},
		{"cat ~/.ssh/../.ssh/id_ed25519", false},
		{"ln -s ~/.ssh/id_ed25519 key && cat key", false},
		{": > /etc/hostname", false},
		{"sed -n 's/x/y/w .git/hooks/post-commit' a.txt", false},
		{"echo '[core] fsmonitor = evil' >> .git/config", false},
		{"echo x > .git/HEAD.new && rm .git/HEAD.new", true},
	} {
		out, ok := f.run(t, c.cmd)
		if ok != c.want {
			t.Errorf("%s: succeeded %v, want %v; output:\n%s", c.cmd, ok, c.want, out)
		}
	}
	if _, err := os.Stat(f.ws + "/.git/hooks/post-commit"); err == nil {
		t.Error("a git hook was planted")
	}
	b, err := os.ReadFile(f.home + "/.bashrc")
	if err != nil || string(b) != "# rc" {
		t.Errorf(".bashrc after the run: %q, %v", b, err)
	}
}

func TestSandboxDropsPrivileges(t *testing.T) {
	f := newFixture(t, Policy{})
	out, ok := f.run(t, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status")
	if !ok {
		t.Fatalf("status: %s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		want := "0000000000000000"
		if k == "NoNewPrivs" {
			want = "1"
		}
		if v != want {
			t.Errorf("%s = %s, want %s", k, v, want)
		}
	}
}

func TestSandboxNetwork(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	probe := "exec 3<>/dev/tcp/127.0.0.1/" + port
	if out, ok := newFixture(t, Policy{}).run(t, probe); ok {
		t.Errorf("network false: connect succeeded: %s", out)
	}
	if out, ok := newFixture(t, Policy{AllowNetwork: []string{"127.0.0.1:" + port}}).run(t, probe); !ok {
		t.Errorf("allow_network: connect failed: %s", out)
	}
	if out, ok := newFixture(t, Policy{Network: true}).run(t, probe); !ok {
		t.Errorf("network true: connect failed: %s", out)
	}
}

func TestSandboxCannotSignalOutside(t *testing.T) {
	f := newFixture(t, Policy{})
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	if out, ok := f.run(t, "kill -TERM "+strconv.Itoa(victim.Process.Pid)); ok {
		t.Errorf("the sandboxed kill reached a process outside: %s", out)
	}
}

func TestSandboxUnavailableRefuses(t *testing.T) {
	box, err := New(Options{Workspace: t.TempDir(), Probe: func() (int, error) { return 0, errors.New("Landlock is not enabled (simulated)") }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = box.Start(Command{Argv: []string{"/bin/true"}})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start = %v, want an *UnavailableError", err)
	}
	for _, want := range []string{"simulated", "sandbox: {mode: off}", "--no-sandbox"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if in := box.Info(); in.Mode != "unavailable" || in.Reason == "" {
		t.Errorf("Info = %+v, want mode unavailable with the reason", in)
	}
	old, _ := New(Options{Workspace: t.TempDir(), Probe: func() (int, error) { return 2, nil }})
	if _, err := old.Start(Command{Argv: []string{"/bin/true"}}); err == nil {
		t.Error("ABI 2 was accepted")
	}
}

func TestPolicyCheck(t *testing.T) {
	for _, p := range []Policy{{Mode: "loose"}, {AllowNetwork: []string{"example.com"}}, {AllowNetwork: []string{"h:0"}}, {Writable: []string{"rel/dir"}}} {
		if p.Check() == nil {
			t.Errorf("%+v passed Check", p)
		}
	}
	if err := (Policy{Mode: ModeReadOnly, AllowNetwork: []string{"proxy:3128"}, Writable: []string{"~/.cache/go-build", "/var/cache/x"}}).Check(); err != nil {
		t.Error(err)
	}
}

func TestRefusedFindsTheRefusedPath(t *testing.T) {
	f := newFixture(t, Policy{})
	for _, c := range []struct {
		out    string
		writes []string
		want   string
		words  []string
	}{
		{"bash: line 1: " + f.home + "/.bashrc: Permission denied\nexit status 1", nil, f.home + "/.bashrc", nil},
		{"ln: failed to create hard link 'hl' => '" + f.home + "/.bashrc': Invalid cross-device link", nil, f.home + "/.bashrc", nil},
		{"sed: couldn't open file .git/hooks/post-commit: Read-only file system", nil, f.ws + "/.git/hooks/post-commit", nil},
		{"exit status 23", []string{"~/.bashrc"}, f.home + "/.bashrc", nil},
		{"rm: cannot remove '../sibling/data': Permission denied", nil, f.sibling + "/data", nil},
		{"rm: cannot remove 'build/x': Permission denied", nil, "", nil},
		{"make: *** [all] Error 2", []string{"out/bin"}, "", nil},
		{"cat: " + f.ws + "/a.txt: No such file or directory", nil, "", nil},
		{"curl: (23) Failure writing output to destination", nil, f.home + "/.bashrc", []string{"curl", "-sSo", "~/.bashrc", "file:///x"}},
		{"", nil, "", []string{"grep", "-q", "x", "~/.bashrc"}},
	} {
		got, ok := f.box.Refused(c.out, c.writes, c.words)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Refused(%q, %q) = %q, %v; want %q", c.out, c.writes, got, ok, c.want)
		}
	}
	if _, ok := (*Sandbox)(nil).Refused("x: Permission denied", []string{"/etc/passwd"}, nil); ok {
		t.Error("a nil sandbox refused something")
	}
}

func TestLinkedFilesFindsHardLinksIntoTheWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside.txt")
	for _, p := range []string{outside, filepath.Join(ws, "plain.txt")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(outside, filepath.Join(ws, "sub", "hl")); err != nil {
		t.Fatal(err)
	}
	files, complete := LinkedFiles(ws, 10)
	if !complete || len(files) != 1 || files[0] != filepath.Join(ws, "sub", "hl") {
		t.Fatalf("LinkedFiles = %v, %v; want the one hard link", files, complete)
	}
}
