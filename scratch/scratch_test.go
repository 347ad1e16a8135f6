//go:build unix

package scratch

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const prefix = "retrace-test-"

// age makes path look unchanged for longer than quiet.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-2 * quiet)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// A directory is made under its prefix with its lock held, and Remove
// takes it away.
func TestMakeAndRemove(t *testing.T) {
	parent := t.TempDir()
	d, err := Make(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d.Path) != parent || !strings.HasPrefix(filepath.Base(d.Path), prefix) {
		t.Errorf("Make made %s, want %s/%s…", d.Path, parent, prefix)
	}
	if !exists(filepath.Join(d.Path, lockName)) {
		t.Errorf("no lock file in %s", d.Path)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(d.Path) {
		t.Errorf("%s is still there after Remove", d.Path)
	}
	if err := d.Remove(); err != nil {
		t.Errorf("a second Remove = %v, want nil", err)
	}
}

// What a process that ended left is removed by the next Make; what a
// live process holds, what changed a moment ago, what has no lock file,
// a link, and what has another prefix are not.
func TestMakeSweepsOnlyWhatNoProcessHolds(t *testing.T) {
	parent := t.TempDir()
	held, err := Make(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Remove()
	age(t, held.Path)

	left := func(name string, withLock, old bool) string {
		path := filepath.Join(parent, name)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(path, "spill.tmp"), []byte("rows"), 0o600)
		if withLock {
			os.WriteFile(filepath.Join(path, lockName), nil, 0o600)
		}
		if old {
			age(t, path)
		}
		return path
	}
	ended := left(prefix+"ended", true, true)
	fresh := left(prefix+"fresh", true, false)
	unlocked := left(prefix+"nolock", false, true)
	other := left("other-ended", true, true)
	link := filepath.Join(parent, prefix+"link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}

	d, err := Make(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if exists(ended) {
		t.Errorf("%s, left by a process that ended, is still there", ended)
	}
	for _, kept := range []string{held.Path, fresh, unlocked, other, link, filepath.Join(other, "spill.tmp")} {
		if !exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
}

// TestHelperHold is the process TestAKilledProcesssDirectoryIsSweptOnce
// kills: it makes a directory, says where, and waits.
func TestHelperHold(t *testing.T) {
	parent := os.Getenv("SCRATCH_HELPER_PARENT")
	if parent == "" {
		t.Skip("run by TestAKilledProcesssDirectoryIsSweptOnce")
	}
	d, err := Make(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(d.Path + "\n")
	time.Sleep(time.Minute)
}

// A process killed while it holds its directory leaves it behind: while
// it lives the directory is kept, and once it is dead the next Make
// removes it.
func TestAKilledProcesssDirectoryIsSweptOnce(t *testing.T) {
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$", "-test.v")
	cmd.Env = append(os.Environ(), "SCRATCH_HELPER_PARENT="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var path string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if line := sc.Text(); strings.HasPrefix(line, parent) {
			path = line
			break
		}
	}
	if path == "" {
		t.Fatal("the helper process said no directory")
	}
	age(t, path)
	d, err := Make(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	d.Remove()
	if !exists(path) {
		t.Fatalf("%s, held by a live process, was removed", path)
	}
	cmd.Process.Kill()
	cmd.Wait()
	age(t, path)
	if d, err = Make(parent, prefix); err != nil {
		t.Fatal(err)
	}
	d.Remove()
	if exists(path) {
		t.Errorf("%s, left by a killed process, is still there", path)
	}
}
