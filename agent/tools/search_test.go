package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// searchWorkspace builds a small project with a .gitignore, a nested
// .gitignore, a .git directory and a binary file.
func searchWorkspace(t *testing.T) *Env {
	t.Helper()
	env := newTestEnv(t)
	ws := env.Workspace()
	writeFile(t, ws, ".gitignore", "build/\n*.log\n!keep.log\n")
	writeFile(t, ws, "main.go", "package main\n\nfunc main() {\n\tTODO()\n}\n")
	writeFile(t, ws, "util.go", "package main\n\n// todo: tidy\nfunc TODO() {}\n")
	writeFile(t, ws, "a.txt", "no match here\n")
	writeFile(t, ws, "debug.log", "TODO in an ignored log\n")
	writeFile(t, ws, "keep.log", "TODO in a re-included log\n")
	writeFile(t, ws, "build/out.go", "TODO in ignored build output\n")
	writeFile(t, ws, ".git/HEAD", "TODO in git internals\n")
	writeFile(t, ws, "bin/tool", "TODO\x00binary\n")
	writeFile(t, ws, "pkg/.gitignore", "gen_*.go\n")
	writeFile(t, ws, "pkg/gen_x.go", "TODO generated\n")
	writeFile(t, ws, "pkg/lib.go", "package pkg\n\nfunc f() {\n\tTODO()\n\tx := 1\n\ty := 2\n\tz := 3\n\tTODO()\n}\n")
	return env
}

func TestGrep(t *testing.T) {
	env := searchWorkspace(t)
	cases := []struct {
		name  string
		input grepInput
		want  string
	}{
		{"files mode lists matching files sorted, skipping .gitignore'd, .git and binary files",
			grepInput{Pattern: "TODO"}, "keep.log\nmain.go\npkg/lib.go\nutil.go\n"},
		{"count mode shows matches per file",
			grepInput{Pattern: "TODO", OutputMode: "count"}, "keep.log:1\nmain.go:1\npkg/lib.go:2\nutil.go:1\n"},
		{"content mode shows path:line:text",
			grepInput{Pattern: `TODO\(\)`, OutputMode: "content", Glob: "*.go"}, "main.go:4:\tTODO()\npkg/lib.go:4:\tTODO()\npkg/lib.go:8:\tTODO()\nutil.go:4:func TODO() {}\n"},
		{"case_insensitive also finds lower-case matches",
			grepInput{Pattern: "todo:", CaseInsensitive: true, OutputMode: "content"}, "util.go:3:// todo: tidy\n"},
		{"context lines use - and groups are separated by --",
			grepInput{Pattern: `TODO\(\)`, OutputMode: "content", Context: 1, Path: "pkg"},
			"pkg/lib.go-3-func f() {\npkg/lib.go:4:\tTODO()\npkg/lib.go-5-\tx := 1\n--\npkg/lib.go-7-\tz := 3\npkg/lib.go:8:\tTODO()\npkg/lib.go-9-}\n"},
		{"a subdirectory search still applies the workspace .gitignore and its own",
			grepInput{Pattern: "TODO", Path: "pkg"}, "pkg/lib.go\n"},
		{"an ignored directory searched directly is still searched",
			grepInput{Pattern: "TODO", Path: "build"}, "build/out.go\n"},
		{"a single file can be searched",
			grepInput{Pattern: "tidy", Path: "util.go"}, "util.go\n"},
		{"a glob with a slash matches the path below the search root",
			grepInput{Pattern: "TODO", Glob: "pkg/**/*.go"}, "pkg/lib.go\n"},
		{"no match gives empty output so the executor says no matches",
			grepInput{Pattern: "nothing-like-this"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, GrepTool{}, env, tc.input)
			if res.IsError {
				t.Fatalf("grep failed: %s", res.Output)
			}
			if res.Output != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", res.Output, tc.want)
			}
		})
	}
}

func TestGrepFailures(t *testing.T) {
	env := searchWorkspace(t)
	cases := []struct {
		name     string
		input    grepInput
		code     string
		contains string
	}{
		{"an invalid regexp gives the error and RE2 advice", grepInput{Pattern: "foo("}, "bad_regexp", "escape it with a backslash"},
		{"lookaround is explained as unsupported RE2 syntax", grepInput{Pattern: "(?=x)"}, "bad_regexp", "no lookaround"},
		{"a missing path is ENOENT", grepInput{Pattern: "x", Path: "nope"}, "ENOENT", "glob or ls"},
		{"an unknown output mode is refused", grepInput{Pattern: "x", OutputMode: "lines"}, "invalid_input", "files_with_matches"},
		{"an invalid glob is refused", grepInput{Pattern: "x", Glob: "[a"}, "bad_pattern", "brackets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, GrepTool{}, env, tc.input)
			if !res.IsError || res.ErrorCode != tc.code || !strings.Contains(res.Output, tc.contains) {
				t.Errorf("IsError=%v code=%q output=%q, want %q containing %q", res.IsError, res.ErrorCode, res.Output, tc.code, tc.contains)
			}
		})
	}
}

func TestGrepStopsWhenCancelled(t *testing.T) {
	env := searchWorkspace(t)
	ctx, cancel := contextWithCancel(t)
	cancel()
	_, err := GrepTool{}.Run(ctx, env, mustJSON(t, grepInput{Pattern: "x"}))
	if err == nil {
		t.Fatal("a cancelled grep returned no error")
	}
}

func TestGlob(t *testing.T) {
	env := searchWorkspace(t)
	ws := env.Workspace()
	// Newest first is the order; keep.log and a.txt share a time, so
	// their order comes from the path.
	base := time.Now().Add(-time.Hour)
	minutes := map[string]int{"keep.log": 0, "a.txt": 0, "util.go": 1, "pkg/lib.go": 2, "main.go": 3}
	for p, m := range minutes {
		mt := base.Add(time.Duration(m) * time.Minute)
		if err := os.Chtimes(filepath.Join(ws, p), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		input globInput
		want  string
	}{
		{"** matches across directories, newest first, without ignored files or .git",
			globInput{Pattern: "**/*.go"}, "main.go\npkg/lib.go\nutil.go\n"},
		{"* stays within one directory", globInput{Pattern: "*.go"}, "main.go\nutil.go\n"},
		{"a path narrows the search and names stay relative to the workspace", globInput{Pattern: "*.go", Path: "pkg"}, "pkg/lib.go\n"},
		{"braces match alternatives and equal times are sorted by path", globInput{Pattern: "**/*.{log,txt}"}, "a.txt\nkeep.log\n"},
		{"an absolute pattern carries its own directory", globInput{Pattern: filepath.Join(ws, "pkg", "*.go")}, "pkg/lib.go\n"},
		{"no match gives empty output", globInput{Pattern: "**/*.rs"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, GlobTool{}, env, tc.input)
			if res.IsError {
				t.Fatalf("glob failed: %s", res.Output)
			}
			if res.Output != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", res.Output, tc.want)
			}
		})
	}
}

func TestGlobFailuresAndPaths(t *testing.T) {
	env := searchWorkspace(t)
	if res := run(t, GlobTool{}, env, globInput{Pattern: "[", Path: ""}); res.ErrorCode != "bad_pattern" {
		t.Errorf("invalid pattern: code %q output %q", res.ErrorCode, res.Output)
	}
	if res := run(t, GlobTool{}, env, globInput{Pattern: "*", Path: "main.go"}); res.ErrorCode != "ENOTDIR" {
		t.Errorf("file as path: code %q output %q", res.ErrorCode, res.Output)
	}
	if res := run(t, GlobTool{}, env, globInput{Pattern: "*", Path: "nope"}); res.ErrorCode != "ENOENT" {
		t.Errorf("missing path: code %q output %q", res.ErrorCode, res.Output)
	}
	got := GlobTool{}.Paths(mustJSON(t, globInput{Pattern: "/etc/**/*.conf"}))
	if len(got) != 1 || got[0] != (Access{Path: "/etc"}) {
		t.Errorf("Paths of an absolute pattern = %+v, want a read of /etc", got)
	}
	got = GlobTool{}.Paths(mustJSON(t, globInput{Pattern: "*.go"}))
	if len(got) != 1 || got[0] != (Access{Path: "."}) {
		t.Errorf("Paths without path = %+v, want a read of the workspace", got)
	}
}

func TestLs(t *testing.T) {
	env := searchWorkspace(t)
	ws := env.Workspace()
	if err := os.Mkdir(filepath.Join(ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "pkg"), filepath.Join(ws, "pkglink")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		input lsInput
		want  string
	}{
		{"the workspace is listed sorted, directories with /, without .git",
			lsInput{}, ".gitignore\na.txt\nbin/\nbuild/\ndebug.log\nempty/\nkeep.log\nmain.go\npkg/\npkglink/\nutil.go\n"},
		{"a subdirectory is listed", lsInput{Path: "pkg"}, ".gitignore\ngen_x.go\nlib.go\n"},
		{"an empty directory gives empty output", lsInput{Path: "empty"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, LsTool{}, env, tc.input)
			if res.IsError || res.Output != tc.want {
				t.Errorf("output (error %v):\n%s\nwant:\n%s", res.IsError, res.Output, tc.want)
			}
		})
	}
	res := run(t, LsTool{}, env, lsInput{Path: "main.go"})
	if res.ErrorCode != "ENOTDIR" || !strings.Contains(res.Output, "Use read") {
		t.Errorf("ls of a file: code %q output %q", res.ErrorCode, res.Output)
	}
	res = run(t, LsTool{}, env, lsInput{Path: "nope"})
	if res.ErrorCode != "ENOENT" {
		t.Errorf("ls of a missing path: code %q", res.ErrorCode)
	}
}
