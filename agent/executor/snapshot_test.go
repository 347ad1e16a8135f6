package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/trajectory"
)

// approveAll is a person who says yes to every question.
type approveAll struct{}

func (approveAll) Confirm(context.Context, Prompt) (bool, error) { return true, nil }

// manifestOf runs one bash command in bypass mode and returns the manifest
// of its pre-run snapshot.
func manifestOf(t *testing.T, h *harness, cmd string) (snapshotManifest, []byte) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": cmd})
	res := h.turnWith(context.Background(), use("toolu_1", "bash", string(in)))
	evs := h.events()
	ref := endOf(t, evs, "toolu_1").Snapshot
	if ref == "" {
		t.Fatalf("no snapshot for %s (result %q)", cmd, res[0].Content)
	}
	data, err := h.ex.cfg.Blobs.(interface{ Get(string) ([]byte, error) }).Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m snapshotManifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("manifest %s: %v", data, err)
	}
	return m, data
}

func blobOf(t *testing.T, h *harness, ref string) string {
	t.Helper()
	data, err := h.ex.cfg.Blobs.(interface{ Get(string) ([]byte, error) }).Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestABashRedirectionIsSnapshottedAtTheFileItResolvesTo(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	os.MkdirAll(filepath.Join(h.ws, "d1", "d2"), 0o755)
	os.WriteFile(filepath.Join(h.ws, "d1", "d2", "f"), []byte("before\n"), 0o644)
	os.Symlink("d1/d2", filepath.Join(h.ws, "l"))
	m, _ := manifestOf(t, h, "echo after > l/f && echo more >> l/../d2/f")
	if len(m.Files) != 1 {
		t.Fatalf("manifest files %+v, want the one file both targets resolve to", m.Files)
	}
	f := m.Files[0]
	if f.Path != filepath.Join(h.ws, "d1", "d2", "f") || !f.Existed || blobOf(t, h, f.Blob) != "before\n" {
		t.Errorf("file %+v, want the resolved d1/d2/f with its content before the call", f)
	}
	if m.Partial {
		t.Errorf("a command with only static targets was marked partial")
	}
	if got, _ := os.ReadFile(filepath.Join(h.ws, "d1", "d2", "f")); string(got) != "after\nmore\n" {
		t.Errorf("the command did not run as expected: %q", got)
	}
}

func TestASnapshotOfACommandThatMayWriteUnknownFilesSaysItIsPartial(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}, prompt: approveAll{}})
	m, _ := manifestOf(t, h, `echo hi > "$(echo x).txt"`)
	if !m.Partial {
		t.Errorf("manifest %+v: a write only known at run time must mark the snapshot partial", m)
	}
	if m.Files == nil {
		t.Errorf("files must be an empty list, not missing")
	}
}

func TestTheManifestSummaryHoldsNoSecretEvenWhereTruncationCutsIt(t *testing.T) {
	const key = "sk-ant-api03-Xq7vLm2Np9Rt4Kw8Zs1Bc6Df3Gh5Jy0Ua-Ei_OoPx"
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	// The key starts a little before the summary's cut, so truncating first
	// would leave a prefix the patterns no longer recognise.
	cmd := "echo " + strings.Repeat("a", maxSummary-20) + " " + key + " > out.txt"
	m, data := manifestOf(t, h, cmd)
	for _, leak := range []string{key, key[:20], "Xq7vLm2Np9"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("the manifest holds %q: %s", leak, data)
		}
	}
	if !strings.Contains(m.Summary, "echo aaaa") {
		t.Errorf("summary %q lost the command", m.Summary)
	}
}

func TestAWriteToolSnapshotNamesTheResolvedFile(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermAcceptEdits}})
	os.MkdirAll(filepath.Join(h.ws, "d1", "d2"), 0o755)
	os.WriteFile(filepath.Join(h.ws, "d1", "d2", "f"), []byte("old"), 0o644)
	os.Symlink("d1/d2", filepath.Join(h.ws, "l"))
	in, _ := json.Marshal(map[string]string{"file_path": "l/../d2/f", "content": "new"})
	h.turnWith(context.Background(), use("toolu_1", "write", string(in)))
	evs := h.events()
	data := blobOf(t, h, endOf(t, evs, "toolu_1").Snapshot)
	var m snapshotManifest
	if err := json.Unmarshal([]byte(data), &m); err != nil || len(m.Files) != 1 {
		t.Fatalf("manifest %s (%v)", data, err)
	}
	if m.Files[0].Path != filepath.Join(h.ws, "d1", "d2", "f") || blobOf(t, h, m.Files[0].Blob) != "old" {
		t.Errorf("file %+v, want the resolved d1/d2/f holding the old content", m.Files[0])
	}
}

// These need the shell analysis to list the targets of writing programs
// (the shell branch).
func TestWritingProgramsAreSnapshottedBeforeTheyRun(t *testing.T) {
	tests := []struct {
		name  string
		cmd   string
		files []string // relative to the workspace, with their content before
	}{
		{"cp saves the destination it overwrites", "cp b.txt a.txt", []string{"a.txt"}},
		{"mv saves the source and the destination", "mv a.txt b.txt", []string{"a.txt", "b.txt"}},
		{"rm saves what it deletes", "rm a.txt", []string{"a.txt"}},
		{"rm with a glob saves every match", "rm *.txt", []string{"a.txt", "b.txt"}},
		{"sed -i saves the file it edits", "sed -i s/a/b/ a.txt", []string{"a.txt"}},
		{"tee saves the file it overwrites", "echo x | tee b.txt", []string{"b.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
			for _, n := range []string{"a.txt", "b.txt"} {
				os.WriteFile(filepath.Join(h.ws, n), []byte("content of "+n), 0o644)
			}
			m, data := manifestOf(t, h, tt.cmd)
			got := map[string]string{}
			for _, f := range m.Files {
				if f.Blob != "" {
					got[f.Path] = blobOf(t, h, f.Blob)
				}
			}
			for _, n := range tt.files {
				if got[filepath.Join(h.ws, n)] != "content of "+n {
					t.Errorf("%s was not saved before the call: manifest %s", n, data)
				}
			}
		})
	}
}

// More of the write analysis reaches stage ②: the files of truncate, dd
// of=, chmod, install and of every part of a compound command are saved
// with their content before the command runs, and a file that did not
// exist yet is listed as such. Each command is then checked to have
// really changed the file, so the saved content is the "before".
func TestEveryWriteTheAnalysisKnowsIsSnapshottedBeforeTheCommandChangesIt(t *testing.T) {
	tests := []struct {
		name    string
		cmd     string
		saved   []string // existing files saved with their content before
		created []string // files listed as not existing before
	}{
		{"truncate saves the file it empties", "truncate -s 0 a.txt", []string{"a.txt"}, nil},
		{"dd of= saves the file it overwrites", "dd if=b.txt of=a.txt status=none", []string{"a.txt"}, nil},
		{"chmod saves the file whose mode it changes", "chmod 600 a.txt", []string{"a.txt"}, nil},
		{"install saves the destination it replaces", "install -m 644 b.txt a.txt", []string{"a.txt"}, nil},
		{"touch lists a new file as not existing before", "touch new.txt", nil, []string{"new.txt"}},
		{"a compound command saves the files of each part", "cp b.txt a.txt && echo y >> b.txt; mv b.txt c.txt",
			[]string{"a.txt", "b.txt"}, []string{"c.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
			before := map[string]os.FileInfo{}
			for _, n := range []string{"a.txt", "b.txt"} {
				p := filepath.Join(h.ws, n)
				os.WriteFile(p, []byte("content of "+n), 0o644)
				before[n], _ = os.Stat(p)
			}
			m, data := manifestOf(t, h, tt.cmd)
			files := map[string]snapshotFile{}
			for _, f := range m.Files {
				files[f.Path] = f
			}
			for _, n := range tt.saved {
				f, ok := files[filepath.Join(h.ws, n)]
				if !ok || !f.Existed || f.Blob == "" || blobOf(t, h, f.Blob) != "content of "+n {
					t.Errorf("%s was not saved before the call: manifest %s", n, data)
				}
				after, err := os.Stat(filepath.Join(h.ws, n))
				changed := err != nil || after.Size() != before[n].Size() || after.Mode() != before[n].Mode()
				if !changed {
					if got, _ := os.ReadFile(filepath.Join(h.ws, n)); string(got) != "content of "+n {
						changed = true
					}
				}
				if !changed {
					t.Errorf("%s is unchanged after %q, so the test proves nothing", n, tt.cmd)
				}
			}
			for _, n := range tt.created {
				if f, ok := files[filepath.Join(h.ws, n)]; !ok || f.Existed {
					t.Errorf("%s is not listed as a new file: manifest %s", n, data)
				}
				if _, err := os.Stat(filepath.Join(h.ws, n)); err != nil {
					t.Errorf("%q did not create %s: %v", tt.cmd, n, err)
				}
			}
			if m.Partial {
				t.Errorf("the manifest of %q is partial, but every target is static: %s", tt.cmd, data)
			}
		})
	}
}

// The control: commands that write nothing make no snapshot at all.
func TestACommandThatWritesNothingHasNoSnapshot(t *testing.T) {
	for _, cmd := range []string{"cat a.txt", "grep -n content a.txt", "ls -la", "echo hi > /dev/null"} {
		t.Run(cmd, func(t *testing.T) {
			h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
			os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("content of a.txt"), 0o644)
			in, _ := json.Marshal(map[string]string{"command": cmd})
			res := h.turnWith(context.Background(), use("toolu_1", "bash", string(in)))
			if res[0].IsError {
				t.Fatalf("%q failed: %q", cmd, res[0].Content)
			}
			if ref := endOf(t, h.events(), "toolu_1").Snapshot; ref != "" {
				t.Fatalf("%q has the snapshot %s, but it writes nothing", cmd, ref)
			}
		})
	}
}
