package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// FuzzReadOf feeds readOf, which reads a file's content out of a
// client's tool result (outside input), any tool, input and text: it
// never panics, names a file whenever it says anything, and a whole
// numbered read gives back the content it numbered.
func FuzzReadOf(f *testing.F) {
	f.Add("Read", `{"file_path":"a.txt"}`, "1\thello\n2\tline two\n3\t")
	f.Add("Read", `{"file_path":"/w/a.txt"}`, "     1→x\n     2→y\n\n<system-reminder>\nz\n</system-reminder>")
	f.Add("Read", `{"file_path":"a.txt","offset":2}`, "2\tx")
	f.Add("Read", `{"file_path":"a.txt"}`, "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
	f.Add("Bash", `{"command":"cat a.txt"}`, "x")
	f.Add("exec_command", `{"cmd":"cat -- a.txt"}`, "x\n")
	f.Add("shell", `{"command":["bash","-lc","cat a.txt"]}`, "x\n")
	f.Add("Bash", `{"command":"cat a.txt | wc"}`, "1")
	f.Add("read", `{"filePath":"/w/a.txt"}`, "<path>/w/a.txt</path>\n<type>file</type>\n<content>\n1: hello\n2: two\n\n(End of file - total 2 lines)\n</content>")
	f.Fuzz(func(t *testing.T, tool, input, text string) {
		call := &trajectory.ToolCall{ToolRef: trajectory.ToolRef{Tool: tool}, Input: json.RawMessage(input)}
		name, data, partial := readOf(call, text)
		if name == "" && (data != nil || partial != "") {
			t.Fatalf("no file named, yet data %q, partial %q", data, partial)
		}
		if tool != "Read" || name == "" || partial != "" || len(data) == 0 || bytes.Contains(data, []byte("<system-reminder>")) || bytes.Contains(data, []byte("the file exists but the contents are empty")) {
			return
		}
		var b strings.Builder
		for i, l := range strings.Split(string(data), "\n") {
			fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
		}
		_, again, p := readOf(call, strings.TrimSuffix(b.String(), "\n"))
		if p != "" || !bytes.Equal(again, data) {
			t.Fatalf("numbered %q read back as %q (%s)", data, again, p)
		}
	})
}

// TestRelative checks how tool inputs' paths under the recorded working
// directory are made relative, and what is left alone.
func TestRelative(t *testing.T) {
	c := &clientGen{cwd: "/home/u/p", cwdRe: cwdPattern("/home/u/p")}
	for in, want := range map[string]string{
		"/home/u/p":                    ".",
		"/home/u/p/notes.txt":          "notes.txt",
		"cat /home/u/p/notes.txt":      "cat ./notes.txt",
		"cd /home/u/p && ls":           "cd . && ls",
		"ls /home/u/p":                 "ls .",
		"/home/u/project/x":            "/home/u/project/x",
		"cat /home/u/p2/x":             "cat /home/u/p2/x",
		"/etc/passwd":                  "/etc/passwd",
		"diff /home/u/p/a /home/u/p/b": "diff ./a ./b",
	} {
		if got := c.relative(in); got != want {
			t.Errorf("relative(%q) = %q, want %q", in, got, want)
		}
	}
	got := c.relative(map[string]any{"file_path": "/home/u/p/a.go", "edits": []any{"/home/u/p/b"}})
	if fmt.Sprint(got) != "map[edits:[b] file_path:a.go]" {
		t.Errorf("nested: %v", got)
	}
}
