package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/trajectory"
)

// escapeLayout is a workspace beside a directory outside it, with the
// symlinks of every escape route. outside/x exists twice: the workspace's
// own outside/x (which l/../../outside/x reaches for the kernel) and the
// real one beside the workspace (which the same path reaches lexically).
type escapeLayout struct {
	ws, outside string
}

const (
	insideText  = "inside content\n"
	outsideText = "SECRET outside content\n"
)

func layEscapes(t *testing.T, ws string) escapeLayout {
	t.Helper()
	l := escapeLayout{ws: ws, outside: filepath.Join(filepath.Dir(ws), "outside")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "d1", "d2"), 0o755))
	must(os.MkdirAll(filepath.Join(ws, "outside"), 0o755))
	must(os.MkdirAll(l.outside, 0o755))
	must(os.WriteFile(filepath.Join(ws, "outside", "x"), []byte(insideText), 0o644))
	must(os.WriteFile(filepath.Join(l.outside, "x"), []byte(outsideText), 0o644))
	must(os.Symlink("d1/d2", filepath.Join(ws, "l")))
	must(os.Symlink(l.outside, filepath.Join(ws, "escape")))
	must(os.Symlink(filepath.Join(l.outside, "x"), filepath.Join(ws, "filelink")))
	must(os.Symlink(filepath.Join(l.outside, "new.txt"), filepath.Join(ws, "dangling")))
	return l
}

// route is one way of naming a file or directory.
type route struct {
	name string
	path func(escapeLayout) string
	// in says where the route leads: inside the workspace or out of it.
	in bool
}

var fileRoutes = []route{
	{"a dot-dot path", func(escapeLayout) string { return "../outside/x" }, false},
	{"an absolute path", func(l escapeLayout) string { return filepath.Join(l.outside, "x") }, false},
	{"a symlinked directory", func(escapeLayout) string { return "escape/x" }, false},
	{"a symlinked file", func(escapeLayout) string { return "filelink" }, false},
	{"a symlink pointing inside whose dot-dot leads out", func(escapeLayout) string { return "l/../../../outside/x" }, false},
	{"a symlink pointing inside whose dot-dot stays inside although the path lexically leaves", func(escapeLayout) string { return "l/../../outside/x" }, true},
}

var dirRoutes = []route{
	{"a dot-dot path", func(escapeLayout) string { return "../outside" }, false},
	{"an absolute path", func(l escapeLayout) string { return l.outside }, false},
	{"a symlinked directory", func(escapeLayout) string { return "escape" }, false},
	{"a symlink pointing inside whose dot-dot leads out", func(escapeLayout) string { return "l/../../../outside" }, false},
	{"a symlink pointing inside whose dot-dot stays inside although the path lexically leaves", func(escapeLayout) string { return "l/../../outside" }, true},
}

func inputJSON(v map[string]any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestReadingToolsOpenExactlyWhatWasCheckedOnEveryEscapeRoute(t *testing.T) {
	type readTool struct {
		tool  string
		dir   bool
		input func(p string) string
		// shows is what the output holds when the tool reached outside/x
		// or the directory holding it, given the content it found.
		shows func(content string) string
	}
	readers := []readTool{
		{"read", false, func(p string) string { return inputJSON(map[string]any{"file_path": p}) }, func(c string) string { return c[:10] }},
		{"grep", false, func(p string) string {
			return inputJSON(map[string]any{"pattern": "content", "path": p, "output_mode": "content"})
		}, func(c string) string { return c[:10] }},
		{"ls", true, func(p string) string { return inputJSON(map[string]any{"path": p}) }, nil},
		{"glob", true, func(p string) string { return inputJSON(map[string]any{"pattern": "*", "path": p}) }, nil},
		{"grep", true, func(p string) string {
			return inputJSON(map[string]any{"pattern": "content", "path": p, "output_mode": "content"})
		}, func(c string) string { return c[:10] }},
	}
	modes := []trajectory.PermissionMode{trajectory.PermDefault, trajectory.PermPlan, trajectory.PermAcceptEdits, trajectory.PermBypass}
	for _, rt := range readers {
		routes := fileRoutes
		if rt.dir {
			routes = dirRoutes
		}
		for _, r := range routes {
			for _, m := range modes {
				for _, interactive := range []bool{false, true} {
					who := "headless"
					if interactive {
						who = "with a person approving"
					}
					name := fmt.Sprintf("%s through %s in %s mode %s", rt.tool, r.name, m, who)
					t.Run(name, func(t *testing.T) {
						opts := harnessOpts{perm: permission.Config{Mode: m}}
						if interactive {
							opts.prompt = approveAll{}
						}
						h := newHarness(t, opts)
						l := layEscapes(t, h.ws)
						res := h.turnWith(context.Background(), use("toolu_1", rt.tool, rt.input(r.path(l))))
						evs := h.events()
						out := res[0].Content
						switch {
						case r.in:
							// Allowed as a read inside the workspace, and what is
							// read is the workspace's file, not the one beside it.
							if res[0].IsError || strings.Contains(out, "SECRET") {
								t.Errorf("result %q: want the workspace's own file, never the one outside", out)
							}
							if rt.shows != nil && !strings.Contains(out, rt.shows(insideText)) {
								t.Errorf("result %q does not show the workspace's file", out)
							}
						case !interactive:
							if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailurePermissionDenied {
								t.Errorf("failure %+v, want permission_denied for a read outside the workspace headless", f)
							}
							if strings.Contains(out, "SECRET") || strings.Contains(out, "\nx\n") {
								t.Errorf("a denied read shows the outside: %q", out)
							}
						default:
							// A person confirmed the read outside: it reads there.
							if res[0].IsError {
								t.Errorf("a confirmed read outside failed: %q", out)
							}
							if rt.shows != nil && !strings.Contains(out, rt.shows(outsideText)) {
								t.Errorf("a confirmed read shows %q, want the file outside", out)
							}
						}
					})
				}
			}
		}
	}
}

func TestWritingToolsNeverWriteOutsideTheWorkspaceOnAnyEscapeRoute(t *testing.T) {
	writes := append(append([]route(nil), fileRoutes...),
		route{"a dangling symlink pointing outside", func(escapeLayout) string { return "dangling" }, false},
		route{"a new file below a symlinked directory", func(escapeLayout) string { return "escape/new.txt" }, false})
	modes := []trajectory.PermissionMode{trajectory.PermDefault, trajectory.PermPlan, trajectory.PermAcceptEdits, trajectory.PermBypass}
	for _, tool := range []string{"write", "edit"} {
		for _, r := range writes {
			for _, m := range modes {
				for _, interactive := range []bool{false, true} {
					who := "headless"
					if interactive {
						who = "with a person approving everything"
					}
					t.Run(fmt.Sprintf("%s through %s in %s mode %s", tool, r.name, m, who), func(t *testing.T) {
						opts := harnessOpts{perm: permission.Config{Mode: m}}
						if interactive {
							opts.prompt = approveAll{}
						}
						h := newHarness(t, opts)
						l := layEscapes(t, h.ws)
						p := r.path(l)
						uses := []trajectory.ContentBlock{use("toolu_0", "read", inputJSON(map[string]any{"file_path": p}))}
						if tool == "write" {
							uses = append(uses, use("toolu_1", "write", inputJSON(map[string]any{"file_path": p, "content": "OVERWRITTEN\n"})))
						} else {
							uses = append(uses, use("toolu_1", "edit", inputJSON(map[string]any{"file_path": p, "old_string": "content", "new_string": "OVERWRITTEN"})))
						}
						res := h.turnWith(context.Background(), uses...)
						evs := h.events()
						if b, _ := os.ReadFile(filepath.Join(l.outside, "x")); string(b) != outsideText {
							t.Errorf("the file outside the workspace was changed to %q", b)
						}
						if _, err := os.Stat(filepath.Join(l.outside, "new.txt")); err == nil {
							t.Errorf("a file was created outside the workspace")
						}
						inside, _ := os.ReadFile(filepath.Join(l.ws, "outside", "x"))
						if !r.in {
							if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailurePermissionDenied {
								t.Errorf("failure %+v (%q), want permission_denied in every mode", f, res[1].Content)
							}
							if !strings.Contains(res[1].Content, "outside the workspace") {
								t.Errorf("the model is not told why: %q", res[1].Content)
							}
							if string(inside) != insideText {
								t.Errorf("the workspace's outside/x was changed to %q", inside)
							}
							return
						}
						allowed := m == trajectory.PermBypass || m == trajectory.PermAcceptEdits || (interactive && m != trajectory.PermPlan)
						if changed := strings.Contains(string(inside), "OVERWRITTEN"); changed != allowed {
							t.Errorf("the workspace's own outside/x changed=%v, want %v (result %q)", changed, allowed, res[1].Content)
						}
					})
				}
			}
		}
	}
}

func TestALinkLoopIsRefusedWithAClearMessage(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	os.Symlink("loop2", filepath.Join(h.ws, "loop1"))
	os.Symlink("loop1", filepath.Join(h.ws, "loop2"))
	res := h.turnWith(context.Background(),
		use("toolu_1", "write", inputJSON(map[string]any{"file_path": "loop1/x", "content": "x"})),
		use("toolu_2", "read", inputJSON(map[string]any{"file_path": "loop1"})))
	evs := h.events()
	if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailurePermissionDenied || !strings.Contains(res[0].Content, "cannot be resolved") {
		t.Errorf("write through a loop: %+v %q, want a permission denial saying it cannot be resolved", f, res[0].Content)
	}
	if !res[1].IsError || !strings.Contains(res[1].Content, "cannot be resolved") {
		t.Errorf("read through a loop: %q, want a refusal saying it cannot be resolved", res[1].Content)
	}
}
