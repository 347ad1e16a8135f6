package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree creates files (path → content; a trailing "/" makes an empty
// directory) under root.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifestOf(t *testing.T, b *Blobs, ref string) Manifest {
	t.Helper()
	data, err := b.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func paths(m Manifest) []string {
	var ps []string
	for _, e := range m.Entries {
		ps = append(ps, e.Path)
	}
	return ps
}

func TestSnapshotAndRestoreRoundTripFilesModesDirsAndSymlinks(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	writeTree(t, ws, map[string]string{
		"README.md":        "# project\n",
		"src/a/b/deep.go":  "package b\n",
		"src/main.go":      "package main\n",
		"empty/":           "",
		"nested/empty/":    "",
		"run.sh":           "#!/bin/sh\necho hi\n",
		"docs/guide.txt":   "guide\n",
		"zero-length-file": "",
	})
	if err := os.Chmod(filepath.Join(ws, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(ws, "link-to-main")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../README.md", filepath.Join(ws, "docs", "readme")); err != nil {
		t.Fatal(err)
	}
	ref, rep, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 6 || rep.Symlinks != 2 || rep.Dirs != 2 || len(rep.Warnings) != 0 {
		t.Fatalf("report %+v, want 6 files, 2 symlinks, 2 empty dirs, no warnings", rep)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if err := RestoreWorkspace(blobs, ref, dst); err != nil {
		t.Fatal(err)
	}
	// Snapshotting the restored tree gives the same manifest: contents,
	// modes, links and empty directories all survived.
	ref2, _, err := SnapshotWorkspace(dst, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref2 != ref {
		t.Fatalf("restored tree differs:\n%v\n%v", manifestOf(t, blobs, ref), manifestOf(t, blobs, ref2))
	}
	info, err := os.Stat(filepath.Join(dst, "run.sh"))
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Fatalf("run.sh mode %v (%v), want 0750", info.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "docs", "readme")); err != nil || target != "../README.md" {
		t.Fatalf("docs/readme -> %q (%v)", target, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "link-to-main")); err != nil || string(data) != "package main\n" {
		t.Fatalf("link-to-main reads %q (%v)", data, err)
	}
}

func TestSnapshotRecordsASymlinkOutsideTheWorkspaceButRestoreRefusesIt(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	secret := filepath.Join(t.TempDir(), "secret")
	writeTree(t, ws, map[string]string{"a.txt": "a"})
	os.WriteFile(secret, []byte("do not copy"), 0o600)
	if err := os.Symlink(secret, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	ref, rep, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, blobs, ref)
	if rep.Symlinks != 1 || m.Entries[1].Link != secret || m.Entries[1].Blob != "" {
		t.Fatalf("the link was not recorded as a link: %+v", m.Entries)
	}
	err = RestoreWorkspace(blobs, ref, filepath.Join(t.TempDir(), "dst"))
	if !errors.Is(err, ErrUnsafeSnapshot) || !strings.Contains(err.Error(), "escape") {
		t.Fatalf("restore: %v, want ErrUnsafeSnapshot naming the link", err)
	}
}

func TestSnapshotLeavesOutWhatGitignoreGitAndRetraceExclude(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	writeTree(t, ws, map[string]string{
		".gitignore":           "*.log\nbuild/\n",
		"keep.go":              "package keep\n",
		"debug.log":            "noise",
		"build/out.bin":        "binary",
		"sub/.gitignore":       "secret.txt\n!important.log\n",
		"sub/secret.txt":       "s",
		"sub/important.log":    "kept by negation",
		"sub/other.txt":        "o",
		"other/secret.txt":     "only ignored under sub",
		".git/HEAD":            "ref: refs/heads/main\n",
		"vendor/.git/config":   "nested repo",
		"vendor/lib.go":        "package lib\n",
		".retrace/runs/x.json": "{}",
	})
	ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(paths(manifestOf(t, blobs, ref)), " ")
	want := ".gitignore keep.go other/secret.txt sub/.gitignore sub/important.log sub/other.txt vendor/lib.go"
	if got != want {
		t.Fatalf("entries\n got %s\nwant %s", got, want)
	}
	// What was left out by design is named, each at its highest level,
	// for a replay to explain; retrace's own .retrace is not.
	var left []string
	for _, l := range manifestOf(t, blobs, ref).LeftOut {
		left = append(left, l.Path+":"+l.Why)
	}
	if got, want := strings.Join(left, " "), ".git:git build:gitignore debug.log:gitignore sub/secret.txt:gitignore vendor/.git:git"; got != want {
		t.Fatalf("left out\n got %s\nwant %s", got, want)
	}
}

func TestSnapshotLeavesOutTheDirectoriesItIsToldToSkip(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	writeTree(t, ws, map[string]string{"main.go": "package main\n", "runs/x.jsonl": "{}\n", "sub/runs/y.txt": "kept"})
	ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{Skip: []string{filepath.Join(ws, "runs")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(paths(manifestOf(t, blobs, ref)), " "); got != "main.go sub/runs/y.txt" {
		t.Fatalf("entries %s, want main.go sub/runs/y.txt", got)
	}
}

func TestSnapshotOverTheSizeCapListsSkippedFilesAndWarns(t *testing.T) {
	cases := []struct {
		name    string
		opts    SnapshotOptions
		skipped string
	}{
		{"a file over the per-file cap is skipped and the rest stored", SnapshotOptions{MaxFileBytes: 50}, "big.bin"},
		{"files past the total cap are skipped in path order", SnapshotOptions{MaxBytes: 110}, "small.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
			writeTree(t, ws, map[string]string{"big.bin": strings.Repeat("x", 100), "small.txt": strings.Repeat("y", 20)})
			ref, rep, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{MaxBytes: c.opts.MaxBytes, MaxFileBytes: c.opts.MaxFileBytes})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "size cap") || !strings.Contains(rep.Warnings[0], c.skipped) {
				t.Fatalf("warnings %q, want one naming %s and the size cap", rep.Warnings, c.skipped)
			}
			if len(rep.Skipped) != 1 || rep.Skipped[0] != c.skipped {
				t.Fatalf("skipped %v, want [%s]", rep.Skipped, c.skipped)
			}
			for _, e := range manifestOf(t, blobs, ref).Entries {
				if e.Path == c.skipped && (e.Skipped != SkippedTooLarge || e.Blob != "" || e.Size == 0) {
					t.Fatalf("entry %+v, want skipped too_large with its size", e)
				}
			}
			dst := filepath.Join(t.TempDir(), "dst")
			if err := RestoreWorkspace(blobs, ref, dst); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dst, c.skipped)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the skipped file was restored: %v", err)
			}
		})
	}
}

func TestSnapshotOfTheSameTreeGivesTheSameReference(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("d%d/f-%d.txt", i%7, i)] = fmt.Sprint(i)
		files[fmt.Sprintf("d%d-x/g.txt", i%7)] = "g"
	}
	writeTree(t, ws, files)
	ref1, _, err1 := SnapshotWorkspace(ws, OpenBlobs(t.TempDir()), SnapshotOptions{})
	ref2, _, err2 := SnapshotWorkspace(ws, OpenBlobs(t.TempDir()), SnapshotOptions{})
	if err1 != nil || err2 != nil || ref1 != ref2 {
		t.Fatalf("refs %s %s (%v %v)", ref1, ref2, err1, err2)
	}
	os.WriteFile(filepath.Join(ws, "d0", "f-0.txt"), []byte("changed"), 0o644)
	ref3, _, _ := SnapshotWorkspace(ws, OpenBlobs(t.TempDir()), SnapshotOptions{})
	if ref3 == ref1 {
		t.Fatal("a changed file gave the same reference")
	}
}

// putManifest stores a hand-written manifest and returns its reference.
func putManifest(t testing.TB, b *Blobs, m Manifest) string {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := b.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestRestoreRefusesManifestsThatWouldWriteOutsideTheDestination(t *testing.T) {
	blobs := OpenBlobs(t.TempDir())
	content, _, _ := blobs.Put([]byte("pwned"))
	file := func(p string) ManifestEntry {
		return ManifestEntry{Path: p, Type: EntryFile, Mode: 0o644, Size: 5, Blob: content}
	}
	link := func(p, target string) ManifestEntry { return ManifestEntry{Path: p, Type: EntrySymlink, Link: target} }
	cases := []struct {
		name    string
		entries []ManifestEntry
	}{
		{"a path that climbs out with dot-dot is refused", []ManifestEntry{file("../outside.txt")}},
		{"a dot-dot in the middle of a path is refused", []ManifestEntry{file("a/../../outside.txt")}},
		{"an absolute path is refused", []ManifestEntry{file("/tmp/outside.txt")}},
		{"an empty path is refused", []ManifestEntry{file("")}},
		{"a file written through a symlink made by an earlier entry is refused", []ManifestEntry{link("out", ".."), file("out/outside.txt")}},
		{"a file written through a symlink to an absolute directory is refused", []ManifestEntry{link("out", "/tmp"), file("out/outside.txt")}},
		{"a symlink with an absolute target is refused", []ManifestEntry{link("l", "/etc/passwd")}},
		{"a symlink climbing out of the destination is refused", []ManifestEntry{link("a/l", "../../x")}},
		{"a chain of symlinks that climbs out only when resolved is refused", []ManifestEntry{link("a", "."), link("b", "a/..")}},
		{"a symlink loop is refused", []ManifestEntry{link("a", "b/x"), link("b", "a/y")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			ref := putManifest(t, blobs, Manifest{Version: ManifestVersion, Entries: c.entries})
			err := RestoreWorkspace(blobs, ref, dst)
			if !errors.Is(err, ErrUnsafeSnapshot) {
				t.Fatalf("restore: %v, want ErrUnsafeSnapshot", err)
			}
			t.Log(err)
			assertOnly(t, parent, "dst")
			if _, err := os.Stat("/tmp/outside.txt"); err == nil {
				t.Fatal("/tmp/outside.txt exists")
			}
		})
	}
}

// assertOnly fails unless parent holds exactly the entry name, and nothing
// else was created beside it.
func assertOnly(t testing.TB, parent, name string) {
	t.Helper()
	names, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n.Name() != name {
			t.Fatalf("restore wrote %s outside the destination", n.Name())
		}
	}
}

func TestRestoreReportsAMissingBlobWithItsPathAndReference(t *testing.T) {
	blobs := OpenBlobs(t.TempDir())
	missing := "sha256:" + strings.Repeat("ab", 32)
	ref := putManifest(t, blobs, Manifest{Version: ManifestVersion, Entries: []ManifestEntry{
		{Path: "src/gone.go", Type: EntryFile, Mode: 0o644, Size: 3, Blob: missing},
	}})
	err := RestoreWorkspace(blobs, ref, filepath.Join(t.TempDir(), "dst"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "src/gone.go") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("restore: %v, want fs.ErrNotExist naming src/gone.go and %s", err, missing)
	}
	if err := RestoreWorkspace(blobs, missing, filepath.Join(t.TempDir(), "dst")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("restore of a missing manifest: %v, want fs.ErrNotExist", err)
	}
}

func TestRestoreRefusesBadDestinationsAndManifests(t *testing.T) {
	blobs := OpenBlobs(t.TempDir())
	notEmpty := t.TempDir()
	os.WriteFile(filepath.Join(notEmpty, "precious"), []byte("x"), 0o644)
	good := putManifest(t, blobs, Manifest{Version: ManifestVersion})
	future := putManifest(t, blobs, Manifest{Version: 99})
	notJSON, _, _ := blobs.Put([]byte("{not json"))
	cases := []struct {
		name, ref, dst, want string
	}{
		{"a destination that is not empty is refused", good, notEmpty, "not empty"},
		{"a manifest of an unknown version is refused", future, filepath.Join(t.TempDir(), "d"), "version 99"},
		{"a manifest that is not JSON is refused", notJSON, filepath.Join(t.TempDir(), "d"), "not valid JSON"},
		{"a reference that is not a blob reference is refused", "sha256:xyz", filepath.Join(t.TempDir(), "d"), "sha256:<64 hex digits>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := RestoreWorkspace(blobs, c.ref, c.dst)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("restore: %v, want an error with %q", err, c.want)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(notEmpty, "precious")); err != nil || string(data) != "x" {
		t.Fatalf("the non-empty destination was changed: %q %v", data, err)
	}
}

func FuzzRestoreWorkspaceManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[{"path":"a/b.txt","type":"file","mode":420,"blob":"sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"l","type":"symlink","link":".."},{"path":"l/x","type":"file","blob":"sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"a","type":"symlink","link":"."},{"path":"b","type":"symlink","link":"a/.."}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"d","type":"dir"},{"path":"d/e","type":"dir"},{"path":"../x","type":"dir"}]}`))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		blobs := OpenBlobs(t.TempDir())
		if _, _, err := blobs.Put([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		ref, _, err := blobs.Put(manifest)
		if err != nil {
			t.Fatal(err)
		}
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		_ = RestoreWorkspace(blobs, ref, dst)
		assertOnly(t, parent, "dst")
		// Every symlink restored must resolve inside dst.
		realDst, err := filepath.EvalSymlinks(dst)
		if err != nil {
			return
		}
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil // dangling inside dst, or a loop: harmless
			}
			if target != realDst && !strings.HasPrefix(target, realDst+string(filepath.Separator)) {
				t.Fatalf("symlink %s resolves outside dst to %s", p, target)
			}
			return nil
		})
	})
}

func benchTree(b *testing.B) string {
	ws := b.TempDir()
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%40, i%5, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 40)
	}
	writeTree(b, ws, files)
	return ws
}

func BenchmarkSnapshotWorkspace2000Files(b *testing.B) {
	ws := benchTree(b)
	blobs := OpenBlobs(b.TempDir())
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2000*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

func BenchmarkRestoreWorkspace2000Files(b *testing.B) {
	ws := benchTree(b)
	blobs := OpenBlobs(b.TempDir())
	ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		b.Fatal(err)
	}
	parent := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if err := RestoreWorkspace(blobs, ref, filepath.Join(parent, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2000*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// A replay restores into a directory it makes itself (os.MkdirTemp, mode
// 0700), but the recorded agent saw its workspace root with the user's
// mode (0755 under the usual umask): `ls -la` or `stat .` in the replay
// must print what they printed in the session, or a faithful replay reads
// as diverged.
func TestRestoreGivesTheWorkspaceRootItsRecordedMode(t *testing.T) {
	for _, mode := range []fs.FileMode{0o755, 0o700, 0o750} {
		ws, blobs := filepath.Join(t.TempDir(), "ws"), OpenBlobs(t.TempDir())
		writeTree(t, ws, map[string]string{"a.txt": "a\n"})
		if err := os.Chmod(ws, mode); err != nil {
			t.Fatal(err)
		}
		ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := restoredRootMode(t, blobs, ref); got.Perm() != mode {
			t.Errorf("recorded root mode %v: restored root has %v", mode, got.Perm())
		}
	}
}

// A recording is untrusted: its root_mode never makes the replay's
// workspace writable by others, nor takes the owner's access away.
func TestRestoreNeverOpensTheWorkspaceRootToOthers(t *testing.T) {
	for recorded, want := range map[uint32]fs.FileMode{0o777: 0o755, 0o775: 0o755, 0o500: 0o700, 0o4777: 0o755} {
		blobs, ref := manifest(t, fmt.Sprintf(`{"version":1,"entries":[],"root_mode":%d}`, recorded))
		if got := restoredRootMode(t, blobs, ref); got != fs.ModeDir|want {
			t.Errorf("recorded root_mode %o: restored root has %v, want %v", recorded, got, fs.ModeDir|want)
		}
	}
}

// A manifest written before the root's mode was recorded leaves the
// destination's mode as it is.
func TestRestoreOfAManifestWithoutRootModeLeavesTheDestinationAlone(t *testing.T) {
	blobs, ref := manifest(t, `{"version":1,"entries":[]}`)
	if got := restoredRootMode(t, blobs, ref); got.Perm() != 0o700 {
		t.Fatalf("destination mode %v, want MkdirTemp's 0700 untouched", got)
	}
}

// manifest stores a snapshot manifest written by hand and returns its
// blobs and reference.
func manifest(t *testing.T, m string) (*Blobs, string) {
	t.Helper()
	blobs := OpenBlobs(t.TempDir())
	ref, _, err := blobs.Put([]byte(m))
	if err != nil {
		t.Fatal(err)
	}
	return blobs, ref
}

// restoredRootMode restores the snapshot ref into a new directory
// MkdirTemp made (mode 0700, as a replay's) and returns the directory's
// mode after.
func restoredRootMode(t *testing.T, blobs *Blobs, ref string) fs.FileMode {
	t.Helper()
	dst, err := os.MkdirTemp(t.TempDir(), "replay-")
	if err != nil {
		t.Fatal(err)
	}
	if err := RestoreWorkspace(blobs, ref, dst); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode()
}

// The paths left out by design are bounded: a workspace whose .gitignore
// matches thousands of files names MaxLeftOut and counts the rest.
func TestSnapshotBoundsThePathsItNamesAsLeftOut(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	files := map[string]string{".gitignore": "*.log\n"}
	for i := range MaxLeftOut + 10 {
		files[fmt.Sprintf("f%03d.log", i)] = "x"
	}
	writeTree(t, ws, files)
	ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, blobs, ref)
	if len(m.LeftOut) != MaxLeftOut || m.LeftOutMore != 10 {
		t.Fatalf("left out %d named and %d more, want %d and 10", len(m.LeftOut), m.LeftOutMore, MaxLeftOut)
	}
}
