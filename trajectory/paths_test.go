package trajectory

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestExpandInputsSkipsWhatIsNotARegularFileAndReportsWhatCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(goodLine+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	symlink := func(target, rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("runs/a.jsonl")
	linked := symlink("a.jsonl", "runs/linked.jsonl")
	loop := symlink("loop.jsonl", "runs/loop.jsonl")
	dangling := symlink("gone.jsonl", "runs/dangling.jsonl")
	symlink(".", "runs/dir.jsonl")
	pipe := filepath.Join(dir, "runs", "pipe.jsonl")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}

	in, err := ExpandInputs(filepath.Join(dir, "runs"), dir+"/runs/./a.jsonl", Stdin)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(in.Files, ","), strings.Join([]string{Stdin, a, linked}, ","); got != want {
		t.Errorf("Files = %s, want %s (stdin, regular files and links to them, ./a.jsonl the same as a.jsonl)", got, want)
	}
	if len(in.Problems) != 2 {
		t.Fatalf("Problems = %v, want the loop and the dangling link", in.Problems)
	}
	for i, want := range []struct {
		file, says string
		is         error
	}{{loop, "symlink loop", syscall.ELOOP}, {dangling, "a symlink to nothing", os.ErrNotExist}} {
		var fe *FileError
		p := in.Problems[1-i] // dangling sorts before loop
		if !errors.As(p, &fe) || fe.File != want.file || !errors.Is(p, ErrUnreadable) || !errors.Is(p, want.is) || !strings.Contains(p.Error(), want.says) {
			t.Errorf("problem %v, want a FileError for %s saying %q", p, want.file, want.says)
		}
	}
	var skipped []string
	for _, w := range in.Skipped {
		skipped = append(skipped, w.String())
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], "dir.jsonl: warning: skipped: a link to a directory") || !strings.Contains(skipped[1], "pipe.jsonl: warning: skipped: a named pipe") {
		t.Errorf("Skipped = %q, want the link to a directory and the named pipe", skipped)
	}

	in, err = ExpandInputs(pipe)
	if err != nil || len(in.Files) != 1 || in.Files[0] != pipe {
		t.Errorf("a named pipe named explicitly: %+v, err %v; want it read as a stream", in, err)
	}
	if _, err := ExpandInputs(filepath.Join(dir, "runs", "p*.jsonl")); !errors.Is(err, ErrNoRuns) || !strings.Contains(err.Error(), "1 skipped as not regular files") {
		t.Errorf("a glob matching only a pipe: err = %v, want ErrNoRuns saying it was skipped", err)
	}
	in, err = ExpandInputs(loop)
	if err != nil || len(in.Problems) != 1 || !errors.Is(in.Problems[0], syscall.ELOOP) {
		t.Errorf("a loop named explicitly: %+v, err %v; want one problem", in, err)
	}
	if _, err := Expand(filepath.Join(dir, "runs")); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Expand: err = %v, want the problems as an error", err)
	}
}

func TestOpenInputReadsStdinOnlyWhenGivenOne(t *testing.T) {
	r, err := OpenInput(Stdin, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); string(b) != "x" {
		t.Fatalf("read %q from stdin, want x", b)
	}
	if _, err := OpenInput(Stdin, nil); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "<stdin>: ") {
		t.Fatalf("err = %v, want ErrUnreadable naming <stdin>", err)
	}
}

func TestValidateStreamCallsAFileWithoutEventsEmpty(t *testing.T) {
	for _, content := range []string{"", "\n\n", `{"v":1,"se`} {
		rep, err := ValidateStream(strings.NewReader(content), "e.jsonl")
		if err != nil || len(rep.Problems) != 1 || !errors.Is(rep.Problems[0], ErrEmpty) || !strings.HasPrefix(rep.Problems[0].Error(), "e.jsonl: no events (no complete line, so no session_start); ") {
			t.Errorf("%q: problems %v, err %v; want one ErrEmpty", content, rep.Problems, err)
		}
	}
}
