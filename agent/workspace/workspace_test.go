package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a workspace with the symlinks every escape route needs, next to
// a directory outside it.
type tree struct {
	root, ws, outside string
	r                 *Root
}

func newTree(t testing.TB) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{root: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{"ws/d1/d2", "ws/outside", "outside/a/b"} {
		mustMkdir(t, filepath.Join(base, d))
	}
	for _, f := range []string{"ws/outside/x", "ws/d1/d2/f", "outside/x", "outside/a/b/y"} {
		mustWrite(t, filepath.Join(base, f))
	}
	links := map[string]string{
		"ws/l":        "d1/d2",                                  // inside, relative
		"ws/labs":     filepath.Join(base, "ws/d1/d2"),          // inside, absolute
		"ws/escape":   filepath.Join(base, "outside"),           // a directory outside
		"ws/deep":     filepath.Join(base, "outside/a/b"),       // outside, two levels down
		"ws/filelink": "../outside/x",                           // a file outside
		"ws/dangling": filepath.Join(base, "outside/new.txt"),   // dangling, target outside
		"ws/dangin":   "d1/new.txt",                             // dangling, target inside
		"ws/loop1":    "loop2",                                  // a loop
		"ws/loop2":    "loop1",                                  //
		"ws/self":     "self",                                   //
		"ws/chain":    "l",                                      // a link to a link
		"ws/d1/up":    "..",                                     // a link to its parent
		"ws/inlink":   "d1/d2/f",                                // a file inside
		"ws/wsalias":  ".",                                      // the workspace itself
		"ws/dangdir":  filepath.Join(base, "outside/nodir/sub"), // dangling directory
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	if tr.r, err = New(tr.ws); err != nil {
		t.Fatal(err)
	}
	return tr
}

func mustMkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolveFollowsThePathAsTheKernelDoes(t *testing.T) {
	tr := newTree(t)
	ws, out := tr.ws, tr.outside
	tests := []struct {
		name   string
		path   string
		want   string // the resolved path
		inside bool
		link   bool
	}{
		{"a plain relative file is in the workspace", "d1/d2/f", ws + "/d1/d2/f", true, false},
		{"the empty path is the workspace itself", "", ws, true, false},
		{"a dot is the workspace itself", ".", ws, true, false},
		{"a relative dot-dot leaves the workspace", "../outside/x", out + "/x", false, false},
		{"an absolute path outside is outside", out + "/x", out + "/x", false, false},
		{"an absolute path inside is inside", ws + "/d1", ws + "/d1", true, false},
		{"an absolute path climbing out of the workspace is outside", ws + "/../outside/x", out + "/x", false, false},
		{"a symlinked directory leading out is outside", "escape/x", out + "/x", false, true},
		{"a symlinked file leading out is outside", "filelink", out + "/x", false, true},
		{"a symlink pointing inside whose dot-dot stays inside lands inside", "l/../../outside/x", ws + "/outside/x", true, true},
		{"a symlink pointing inside whose dot-dot leads out lands outside", "l/../../../outside/x", out + "/x", false, true},
		{"an absolute symlink pointing inside resolves the same way", "labs/../../outside/x", ws + "/outside/x", true, true},
		{"a symlink deep outside whose dot-dot is applied to its target stays outside", "deep/../x", out + "/a/x", false, true},
		{"a dangling symlink resolves to the target a write would create", "dangling", out + "/new.txt", false, true},
		{"a dangling symlink inside resolves to its target inside", "dangin", ws + "/d1/new.txt", true, true},
		{"a dangling directory link resolves below its target", "dangdir/f", out + "/nodir/sub/f", false, true},
		{"a new file in an existing directory is placed there", "d1/new.go", ws + "/d1/new.go", true, false},
		{"a new file in new directories is placed below the workspace", "a/b/c.go", ws + "/a/b/c.go", true, false},
		{"a dot-dot inside a missing directory climbs back lexically", "nope/../d1", ws + "/d1", true, false},
		{"a dot-dot out of a missing directory is looked at again", "nope/../../outside/x", out + "/x", false, false},
		{"a chain of links is followed to the end", "chain/f", ws + "/d1/d2/f", true, true},
		{"a link to its parent is resolved before the next component", "d1/up/d1/d2/f", ws + "/d1/d2/f", true, true},
		{"a link to the workspace itself is the workspace", "wsalias/d1", ws + "/d1", true, true},
		{"a file inside reached by a link is inside", "inlink", ws + "/d1/d2/f", true, true},
		{"dot-dot above the root stays at the root", "/../../etc/passwd", "/etc/passwd", false, false},
		{"repeated slashes and dots are ignored", "d1//./d2///f", ws + "/d1/d2/f", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tr.r.Resolve(tt.path)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.path, err)
			}
			if got.Path != tt.want || got.Inside != tt.inside || got.ThroughLink != tt.link {
				t.Errorf("Resolve(%q) = %s inside=%v link=%v, want %s inside=%v link=%v", tt.path, got.Path, got.Inside, got.ThroughLink, tt.want, tt.inside, tt.link)
			}
			if got.Inside != (got.Rel != "") {
				t.Errorf("Rel %q does not agree with Inside=%v", got.Rel, got.Inside)
			}
			if got.Inside && filepath.Join(ws, got.Rel) != got.Path {
				t.Errorf("Rel %q does not lead to Path %s", got.Rel, got.Path)
			}
			// The kernel agrees for every path that exists: opening the
			// given path reaches the file Resolve names.
			given := tt.path
			if !filepath.IsAbs(given) {
				given = ws + "/" + given
			}
			if want, err := os.Stat(got.Path); err == nil {
				if have, err := os.Stat(given); err == nil && !os.SameFile(want, have) {
					t.Errorf("the kernel opens another file for %q than %s", tt.path, got.Path)
				}
			}
		})
	}
}

func TestResolveReportsLinkLoops(t *testing.T) {
	tr := newTree(t)
	for _, p := range []string{"loop1", "loop2/x", "self", "d1/../self/y"} {
		_, err := tr.r.Resolve(p)
		if !errors.Is(err, ErrLoop) {
			t.Errorf("Resolve(%q) error = %v, want ErrLoop", p, err)
		}
	}
}

func TestResolveKeepsWhatThePathSaysBesideWhereItLeads(t *testing.T) {
	tr := newTree(t)
	got, err := tr.r.Resolve("l/../../outside/x")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tr.root, "outside", "x"); got.Lexical != want {
		t.Errorf("Lexical = %s, want %s (the path cleaned without the disk)", got.Lexical, want)
	}
	if got.Given != "l/../../outside/x" {
		t.Errorf("Given = %q", got.Given)
	}
}

func TestNewAcceptsAWorkspaceReachedThroughASymlink(t *testing.T) {
	tr := newTree(t)
	alias := filepath.Join(tr.root, "alias")
	if err := os.Symlink(tr.ws, alias); err != nil {
		t.Fatal(err)
	}
	r, err := New(alias)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir() != tr.ws {
		t.Errorf("Dir = %s, want the resolved %s", r.Dir(), tr.ws)
	}
	for _, p := range []string{alias + "/d1/d2/f", alias + "/l/f"} {
		got, err := r.Resolve(p)
		if err != nil || !got.Inside || got.Path != tr.ws+"/d1/d2/f" {
			t.Errorf("Resolve(%s) = %+v, %v; want inside at %s/d1/d2/f", p, got, err, tr.ws)
		}
	}
	if got, err := r.Resolve(alias + "/../outside/x"); err != nil || got.Inside {
		t.Errorf("Resolve(alias/../outside/x) = %+v, %v; want outside", got, err)
	}
	for _, bad := range []string{"", filepath.Join(tr.ws, "d1/d2/f"), filepath.Join(tr.root, "missing")} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted something that is not a directory", bad)
		}
	}
}

func TestOpenAndWriteUseTheResolvedFile(t *testing.T) {
	tr := newTree(t)
	in, err := tr.r.Resolve("l/../../outside/x")
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.r.ReadFile(in)
	if err != nil || string(data) != tr.ws+"/outside/x" {
		t.Fatalf("ReadFile = %q, %v; want the workspace's outside/x", data, err)
	}
	newFile, _ := tr.r.Resolve("n1/n2/file.txt")
	if err := tr.r.WriteFile(newFile, []byte("hi"), 0o644); err != nil {
		t.Fatalf("WriteFile of a new file in new directories: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(tr.ws, "n1/n2/file.txt")); string(b) != "hi" {
		t.Errorf("the new file holds %q", b)
	}
	for _, p := range []string{"escape/w", "dangling", "../outside/w", "l/../../../outside/w"} {
		tg, err := tr.r.Resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.r.WriteFile(tg, []byte("x"), 0o644); !errors.Is(err, ErrOutside) {
			t.Errorf("WriteFile(%s) error = %v, want ErrOutside", p, err)
		}
		if _, err := tr.r.OpenFile(tg, os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrOutside) {
			t.Errorf("OpenFile(%s, write) error = %v, want ErrOutside", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tr.outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a write through the dangling link created its target outside: %v", err)
	}
	out, _ := tr.r.Resolve("escape/x")
	if data, err := tr.r.ReadFile(out); err != nil || !strings.HasSuffix(string(data), "outside/x") {
		t.Errorf("reading a confirmed path outside: %q, %v", data, err)
	}
}

func TestOpenCannotBeRedirectedOutByASwappedComponent(t *testing.T) {
	tr := newTree(t)
	tg, err := tr.r.Resolve("d1/d2/f")
	if err != nil {
		t.Fatal(err)
	}
	// Between the check and the open, d1 is replaced by a link out.
	if err := os.Rename(filepath.Join(tr.ws, "d1"), filepath.Join(tr.ws, "d1.old")); err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Join(tr.outside, "d2"))
	mustWrite(t, filepath.Join(tr.outside, "d2", "f"))
	if err := os.Symlink(tr.outside, filepath.Join(tr.ws, "d1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.r.ReadFile(tg); err == nil {
		t.Error("ReadFile followed a component swapped for a link out of the workspace")
	}
	if err := tr.r.WriteFile(tg, []byte("x"), 0o644); err == nil {
		t.Error("WriteFile followed a component swapped for a link out of the workspace")
	}
	if b, _ := os.ReadFile(filepath.Join(tr.outside, "d2", "f")); strings.TrimSpace(string(b)) == "x" {
		t.Error("the file outside was overwritten")
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"l/../../outside/x", "../x", "/etc/passwd", "", ".", "loop1", "dangling", "a//b/../c", "escape/../../x", "d1/*", "~/x", ".*/x", "$X/y"} {
		f.Add(s)
	}
	tr := newTree(f)
	f.Fuzz(func(t *testing.T, p string) {
		if strings.ContainsRune(p, 0) {
			return
		}
		if self, matches, known := tr.r.ResolveShell(p, tr.root); known {
			for _, m := range append(matches, self) {
				if !filepath.IsAbs(m.Path) || m.Inside != Within(m.Path, tr.ws) {
					t.Fatalf("ResolveShell(%q) gave %+v", p, m)
				}
			}
		}
		got, err := tr.r.Resolve(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got.Path) || filepath.Clean(got.Path) != got.Path {
			t.Fatalf("Resolve(%q).Path = %q is not absolute and clean", p, got.Path)
		}
		if got.Inside != Within(got.Path, tr.ws) {
			t.Fatalf("Resolve(%q): Inside=%v for %s", p, got.Inside, got.Path)
		}
	})
}

func TestResolveShellExpandsTildeAndGlobsAsBashWill(t *testing.T) {
	tr := newTree(t)
	home := filepath.Join(tr.root, "outside")
	tests := []struct {
		name    string
		word    string
		known   bool
		self    string
		matches []string
	}{
		{"a plain word is one path", "d1/d2/f", true, tr.ws + "/d1/d2/f", nil},
		{"a tilde is the home directory", "~/x", true, home + "/x", nil},
		{"a lone tilde is the home directory", "~", true, home, nil},
		{"a glob is expanded against the disk", "d1/d2/*", true, tr.ws + "/d1/d2/*", []string{tr.ws + "/d1/d2/f"}},
		{"a glob through a link is expanded at the link's target", "escape/a/*", true, tr.outside + "/a/*", []string{tr.outside + "/a/b"}},
		{"a glob matching nothing still names its directory", "d1/none*", true, tr.ws + "/d1/none*", nil},
		{"a variable is only known at run time", "$OUT", false, "", nil},
		{"a substitution is only known at run time", "$(pwd)/x", false, "", nil},
		{"a glob that could match dot-dot is only known at run time", ".*/x", false, "", nil},
		{"a bracket glob that could match a dot is only known at run time", "[.]*/x", false, "", nil},
		{"a link loop is only known at run time", "loop1/*", false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self, matches, known := tr.r.ResolveShell(tt.word, home)
			if known != tt.known {
				t.Fatalf("ResolveShell(%q) known = %v, want %v", tt.word, known, tt.known)
			}
			if !known {
				return
			}
			var got []string
			for _, m := range matches {
				got = append(got, m.Path)
			}
			if self.Path != tt.self || strings.Join(got, ",") != strings.Join(tt.matches, ",") {
				t.Errorf("ResolveShell(%q) = %s %v, want %s %v", tt.word, self.Path, got, tt.self, tt.matches)
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	tr := newTree(b)
	for b.Loop() {
		if _, err := tr.r.Resolve("l/../d2/f"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/resolve")
}
