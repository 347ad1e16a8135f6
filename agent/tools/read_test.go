package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// numbered returns lines from..to as read numbers them.
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\tline %d\n", i, i)
	}
	return b.String()
}

func linesFile(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadShowsNumberedLines(t *testing.T) {
	env := newTestEnv(t)
	ws := env.Workspace()
	writeFile(t, ws, "five.txt", linesFile(5))
	writeFile(t, ws, "long.txt", linesFile(2500))
	writeFile(t, ws, "nonl.txt", "a\nb")

	cases := []struct {
		name  string
		input readInput
		want  string
	}{
		{"a short file is shown whole, with no hint", readInput{FilePath: "five.txt"}, numbered(1, 5)},
		{"a file without a final newline still shows its last line", readInput{FilePath: "nonl.txt"}, "     1\ta\n     2\tb\n"},
		{"an absolute path works like a relative one", readInput{FilePath: filepath.Join(ws, "five.txt")}, numbered(1, 5)},
		{"offset and limit show a window and say how to continue and that the file is short",
			readInput{FilePath: "five.txt", Offset: 2, Limit: 2},
			numbered(2, 3) + "\n(Showing lines 2-3 of 5. To continue, call read with offset=4. The whole file has only 5 lines: read it in one call without offset and limit instead of in parts.)\n"},
		{"an offset that reaches the end says it is the end",
			readInput{FilePath: "five.txt", Offset: 4},
			numbered(4, 5) + "\n(Showing lines 4-5 of 5. This is the end of the file. The whole file has only 5 lines: read it in one call without offset and limit instead of in parts.)\n"},
		{"a file longer than 2000 lines is cut at 2000 with the total and the next offset",
			readInput{FilePath: "long.txt"},
			numbered(1, 2000) + "\n(Showing lines 1-2000 of 2500. To continue, call read with offset=2001.)\n"},
		{"a limit above 2000 is capped at 2000",
			readInput{FilePath: "long.txt", Offset: 101, Limit: 5000},
			numbered(101, 2100) + "\n(Showing lines 101-2100 of 2500. To continue, call read with offset=2101.)\n"},
		{"the last window of a long file says it is the end, without the read-at-once advice",
			readInput{FilePath: "long.txt", Offset: 2401},
			numbered(2401, 2500) + "\n(Showing lines 2401-2500 of 2500. This is the end of the file.)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, ReadTool{}, env, tc.input)
			if res.IsError {
				t.Fatalf("read failed: %s", res.Output)
			}
			if res.Output != tc.want {
				t.Errorf("output:\n%q\nwant:\n%q", tail(res.Output), tail(tc.want))
			}
		})
	}
}

// tail keeps failure messages about long outputs readable.
func tail(s string) string {
	if len(s) > 400 {
		return "…" + s[len(s)-400:]
	}
	return s
}

func TestReadMarksTheFileRead(t *testing.T) {
	env := newTestEnv(t)
	p := writeFile(t, env.Workspace(), "a.txt", "x\n")
	res, err := ReadTool{}.Run(t.Context(), env, mustJSON(t, readInput{FilePath: "a.txt"}))
	if err != nil || res.IsError {
		t.Fatalf("read: %v %s", err, res.Output)
	}
	if env.WasRead(p) {
		t.Fatal("the file counts as read before the executor applied Modify")
	}
	if res.Modify == nil {
		t.Fatal("a successful read has no Modify")
	}
	res.Modify(env)
	if !env.WasRead(p) {
		t.Error("the file does not count as read after Modify")
	}
}

func TestReadCutsLongLines(t *testing.T) {
	env := newTestEnv(t)
	long := strings.Repeat("é", 2500)
	writeFile(t, env.Workspace(), "min.js", "short\n"+long+"\nend\n")
	res := run(t, ReadTool{}, env, readInput{FilePath: "min.js"})
	want := "     1\tshort\n     2\t" + strings.Repeat("é", 2000) + "… [line cut: 500 more characters]\n     3\tend\n"
	if res.Output != want {
		t.Errorf("output = %q…, want %q…", tail(res.Output), tail(want))
	}
}

func TestReadStopsAtItsSizeLimitAndSaysHowToContinue(t *testing.T) {
	env := newTestEnv(t)
	var b strings.Builder
	for range 300 {
		b.WriteString(strings.Repeat("x", 1999) + "\n")
	}
	writeFile(t, env.Workspace(), "wide.txt", b.String())
	res := run(t, ReadTool{}, env, readInput{FilePath: "wide.txt"})
	if len(res.Output) > readMaxOutput+500 {
		t.Errorf("output is %d bytes, over the %d limit", len(res.Output), readMaxOutput)
	}
	if !strings.Contains(res.Output, "of 300. The output reached read's size limit. To continue, call read with offset=") {
		t.Errorf("no continuation hint: %q", tail(res.Output))
	}
}

func TestReadFailures(t *testing.T) {
	env := newTestEnv(t)
	ws := env.Workspace()
	writeFile(t, ws, "img.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	writeFile(t, ws, "dir/x.txt", "x")
	writeFile(t, ws, "three.txt", "a\nb\nc\n")
	cases := []struct {
		name     string
		input    readInput
		code     string
		contains string
	}{
		{"a missing file is ENOENT and suggests glob or ls", readInput{FilePath: "nope.txt"}, "ENOENT", "use glob or ls"},
		{"a directory is EISDIR and suggests ls", readInput{FilePath: "dir"}, "EISDIR", "Use ls"},
		{"a binary file is refused with what to do instead", readInput{FilePath: "img.png"}, "binary", "xxd"},
		{"an offset past the end names the line count", readInput{FilePath: "three.txt", Offset: 9}, "offset_past_end", "which has 3 lines"},
		{"a negative offset is refused", readInput{FilePath: "three.txt", Offset: -1}, "invalid_input", "positive"},
		{"a path through a file is ENOTDIR", readInput{FilePath: "three.txt/x"}, "ENOTDIR", "ls"},
		{"a device is refused, so /dev/zero cannot make read run for ever", readInput{FilePath: "/dev/zero"}, "not_regular", "head -c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, ReadTool{}, env, tc.input)
			if !res.IsError || res.ErrorCode != tc.code {
				t.Fatalf("IsError=%v ErrorCode=%q, want an error %q; output %q", res.IsError, res.ErrorCode, tc.code, res.Output)
			}
			if !strings.Contains(res.Output, tc.contains) {
				t.Errorf("output %q does not contain %q", res.Output, tc.contains)
			}
			if res.Modify != nil {
				t.Errorf("a failed read marks the file read")
			}
		})
	}
}

func TestReadOfAnEmptyFileSaysItIsEmpty(t *testing.T) {
	env := newTestEnv(t)
	writeFile(t, env.Workspace(), "empty.txt", "")
	res := run(t, ReadTool{}, env, readInput{FilePath: "empty.txt"})
	if res.IsError || !strings.Contains(res.Output, "is empty") {
		t.Errorf("output = %q, IsError %v", res.Output, res.IsError)
	}
}

func TestReadOfAnUnreadableFileIsEACCES(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	env := newTestEnv(t)
	p := writeFile(t, env.Workspace(), "secret.txt", "x")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	res := run(t, ReadTool{}, env, readInput{FilePath: "secret.txt"})
	if res.ErrorCode != "EACCES" {
		t.Errorf("ErrorCode = %q, want EACCES", res.ErrorCode)
	}
}
