package tools

import (
	"os"
	"strings"
	"testing"
)

func TestWriteCreatesAndOverwrites(t *testing.T) {
	env := newTestEnv(t)
	ws := env.Workspace()
	res := run(t, WriteTool{}, env, writeInput{FilePath: "deep/new/dir/a.txt", Content: "hello\n"})
	p := ws + "/deep/new/dir/a.txt"
	if res.IsError || res.Output != "Created "+p+": wrote 6 bytes." {
		t.Errorf("create output = %q", res.Output)
	}
	if got := readBack(t, p); got != "hello\n" {
		t.Errorf("content = %q", got)
	}
	if !env.WasRead(p) {
		t.Error("a written file does not count as read, so edit would refuse it")
	}
	res = run(t, WriteTool{}, env, writeInput{FilePath: p, Content: ""})
	if res.IsError || res.Output != "Overwrote "+p+": wrote 0 bytes." {
		t.Errorf("overwrite output = %q", res.Output)
	}
	if got := readBack(t, p); got != "" {
		t.Errorf("content after overwrite = %q", got)
	}
}

func TestWriteToADirectoryFails(t *testing.T) {
	env := newTestEnv(t)
	if err := os.Mkdir(env.Workspace()+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, WriteTool{}, env, writeInput{FilePath: "d", Content: "x"})
	if !res.IsError || res.ErrorCode != "EISDIR" {
		t.Errorf("IsError=%v code=%q output=%q", res.IsError, res.ErrorCode, res.Output)
	}
}

func TestWriteAndEditDeclareTheirPathsAsWrites(t *testing.T) {
	for _, tc := range []struct {
		tool  PathTool
		input string
	}{
		{WriteTool{}, `{"file_path":"a/b.go","content":""}`},
		{EditTool{}, `{"file_path":"a/b.go","old_string":"x","new_string":"y"}`},
	} {
		got := tc.tool.Paths([]byte(tc.input))
		if len(got) != 1 || got[0] != (Access{Path: "a/b.go", Write: true}) {
			t.Errorf("%T.Paths = %+v, want one write of a/b.go", tc.tool, got)
		}
	}
	if got := (ReadTool{}).Paths([]byte(`{"file_path":"x"}`)); len(got) != 1 || got[0] != (Access{Path: "x"}) {
		t.Errorf("ReadTool.Paths = %+v, want one read of x", got)
	}
	if got := (WriteTool{}).Paths([]byte(`not json`)); got != nil {
		t.Errorf("Paths of undecodable input = %+v, want nil", got)
	}
}

const editSource = `package main

import "fmt"

func main() {
	fmt.Println("one")
	fmt.Println("two")
	fmt.Println("one")
}
`

func TestEdit(t *testing.T) {
	cases := []struct {
		name     string
		read     bool
		input    editInput
		code     string // "" for success
		contains string
		after    string // the file afterwards
	}{
		{"a file not read in this session is refused with a call to read it first",
			false, editInput{OldString: `"two"`, NewString: `"2"`}, "not_read", "Call read on it first", editSource},
		{"text that does not occur is refused with advice on whitespace and re-reading",
			true, editInput{OldString: "fmt.Println(\"three\")", NewString: "x"}, "not_found", "check whitespace, indentation", editSource},
		{"text that occurs twice is refused with the count and both ways out",
			true, editInput{OldString: `fmt.Println("one")`, NewString: "x"}, "ambiguous", "occurs 2 times", editSource},
		{"identical old and new text is refused",
			true, editInput{OldString: "main", NewString: "main"}, "no_change", "the same", editSource},
		{"an empty old_string is refused and points to write",
			true, editInput{OldString: "", NewString: "x"}, "empty_old_string", "use write", editSource},
		{"a unique match is replaced and shown with numbered context",
			true, editInput{OldString: `fmt.Println("two")`, NewString: "fmt.Println(\"2\")\n\tfmt.Println(\"2b\")"}, "",
			"replaced 1 occurrence.\n     4\t\n     5\tfunc main() {\n     6\t\tfmt.Println(\"one\")\n     7\t\tfmt.Println(\"2\")\n     8\t\tfmt.Println(\"2b\")\n     9\t\tfmt.Println(\"one\")\n    10\t}\n",
			strings.Replace(editSource, `fmt.Println("two")`, "fmt.Println(\"2\")\n\tfmt.Println(\"2b\")", 1)},
		{"replace_all changes every occurrence and says how many",
			true, editInput{OldString: `"one"`, NewString: `"1"`, ReplaceAll: true}, "", "replaced 2 occurrences. The first change:",
			strings.ReplaceAll(editSource, `"one"`, `"1"`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t)
			p := writeFile(t, env.Workspace(), "main.go", editSource)
			if tc.read {
				run(t, ReadTool{}, env, readInput{FilePath: "main.go"})
			}
			tc.input.FilePath = "main.go"
			res := run(t, EditTool{}, env, tc.input)
			if tc.code == "" && res.IsError {
				t.Fatalf("edit failed: %s", res.Output)
			}
			if tc.code != "" && (!res.IsError || res.ErrorCode != tc.code) {
				t.Fatalf("IsError=%v code=%q, want error %q; output %q", res.IsError, res.ErrorCode, tc.code, res.Output)
			}
			if !strings.Contains(res.Output, tc.contains) {
				t.Errorf("output %q does not contain %q", res.Output, tc.contains)
			}
			if got := readBack(t, p); got != tc.after {
				t.Errorf("file afterwards:\n%s\nwant:\n%s", got, tc.after)
			}
		})
	}
}

func TestEditOfAMissingFileSuggestsWrite(t *testing.T) {
	env := newTestEnv(t)
	res := run(t, EditTool{}, env, editInput{FilePath: "nope.go", OldString: "a", NewString: "b"})
	if res.ErrorCode != "ENOENT" || !strings.Contains(res.Output, "use write") {
		t.Errorf("code=%q output=%q", res.ErrorCode, res.Output)
	}
}

func TestEditKeepsTheFileMode(t *testing.T) {
	env := newTestEnv(t)
	p := writeFile(t, env.Workspace(), "run.sh", "echo a\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	env.MarkRead(p)
	if res := run(t, EditTool{}, env, editInput{FilePath: p, OldString: "a", NewString: "b"}); res.IsError {
		t.Fatal(res.Output)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o755 {
		t.Errorf("mode after edit = %v, want 0755", info.Mode().Perm())
	}
}
