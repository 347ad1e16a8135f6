package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/agent/workspace"
)

// maxSnapshotFile is the largest file a snapshot saves; a bigger one is
// listed without content so that one huge file cannot fill the disk.
const maxSnapshotFile = 32 << 20

// maxSummary is the most bytes of a command kept in a manifest's summary.
const maxSummary = 200

// snapshotManifest is the blob that records what a mutating call was about
// to change. Its summary names the trigger — the command, not just the file
// list — so the right snapshot can be picked later.
type snapshotManifest struct {
	ToolUseID string         `json:"tool_use_id"`
	Tool      string         `json:"tool"`
	Summary   string         `json:"summary"`
	Files     []snapshotFile `json:"files"`
	// Partial says the call may change files that are not listed: a bash
	// command whose write targets are only known when it runs (a dynamic
	// path, a glob that could match "..", a program the analysis does not
	// know). Restoring such a snapshot may not undo everything.
	Partial bool `json:"partial,omitempty"`
	// Unknown lists the write targets that could not be resolved before the
	// call ran, as the command wrote them.
	Unknown []string `json:"unknown,omitempty"`
}

type snapshotFile struct {
	// Path is the file the write target resolves to (package workspace):
	// the file that will be changed, not the path as written.
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	// Blob is the BlobRef of the file's content before the call.
	Blob string `json:"blob,omitempty"`
	// Skipped says why the content was not saved (too_large, unreadable).
	Skipped string `json:"skipped,omitempty"`
}

// snapshot runs stage 2 just before the tool does: after the hooks and the
// permission chain, because a hook may change which file the call writes
// and a denied call changes nothing. Every write target is resolved with
// workspace.Root.Resolve, as the permission chain checked it; for bash
// those are the analysis's static write targets (globs expanded as bash
// will), and a command that may write elsewhere marks the manifest
// partial. It returns the manifest's BlobRef, or "" when the call writes
// no known file and none unknown. A failed snapshot never fails the call.
func (c *call) snapshot(input json.RawMessage) string {
	env := c.ex.cfg.Env
	m := snapshotManifest{ToolUseID: c.id, Tool: c.name, Summary: c.name}
	var targets []workspace.Target
	if pt, ok := c.tool.(tools.PathTool); ok {
		for _, a := range pt.Paths(input) {
			if !a.Write {
				continue
			}
			m.Summary = c.name + " " + a.Path
			if t, err := env.Resolve(a.Path); err == nil {
				targets = append(targets, t)
			} else {
				m.Partial, m.Unknown = true, append(m.Unknown, a.Path)
			}
		}
	}
	if ct, ok := c.tool.(tools.CommandTool); ok {
		cmd := ct.Command(input)
		a := shell.Analyze(cmd)
		home := c.ex.cfg.Permission.Home()
		for _, w := range a.Writes {
			self, matches, known := env.Root().ResolveShell(w, home)
			switch {
			case !known:
				m.Partial, m.Unknown = true, append(m.Unknown, w)
			case len(matches) > 0:
				targets = append(targets, matches...)
			default:
				targets = append(targets, self)
			}
		}
		if a.WritesUnknown {
			m.Partial = true
		}
		m.Summary = c.summary(cmd)
	}
	if len(targets) == 0 && !m.Partial {
		return ""
	}
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Path] {
			continue
		}
		seen[t.Path] = true
		m.Files = append(m.Files, c.snapshotFile(env, t))
	}
	if m.Files == nil {
		m.Files = []snapshotFile{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	ref, _, err := c.ex.cfg.Blobs.Put(data) // Put redacts what it stores
	if err != nil {
		return ""
	}
	return ref
}

// summary is a command as a manifest names it: redacted first, so that a
// secret cut by the truncation is not left half visible, then cut to
// maxSummary bytes on a character boundary.
func (c *call) summary(cmd string) string {
	cmd = string(c.ex.cfg.Blobs.Redact([]byte(cmd)))
	if len(cmd) <= maxSummary {
		return cmd
	}
	cut := maxSummary
	for cut > 0 && !utf8.RuneStart(cmd[cut]) {
		cut--
	}
	return cmd[:cut] + "…"
}

// snapshotFile saves one target's content before the call changes it.
func (c *call) snapshotFile(env *tools.Env, t workspace.Target) snapshotFile {
	f := snapshotFile{Path: t.Path}
	root := env.Root()
	info, err := root.Stat(t)
	switch {
	case err != nil && isNotExist(err):
	case err != nil:
		f.Existed, f.Skipped = true, "unreadable"
	case !info.Mode().IsRegular():
		f.Existed, f.Skipped = true, "not_a_file"
	case info.Size() > maxSnapshotFile:
		f.Existed, f.Skipped = true, "too_large"
	default:
		f.Existed = true
		if data, err := root.ReadFile(t); err != nil {
			f.Skipped = "unreadable"
		} else if red := c.ex.cfg.Blobs.Redact(data); !bytes.Equal(red, data) {
			// Stored redacted, the file would be restored different from
			// what it was without a word; not stored, the manifest says so
			// (the workspace snapshot does the same).
			f.Skipped = "secret"
		} else if ref, _, err := c.ex.cfg.Blobs.Put(data); err != nil {
			f.Skipped = "store_failed"
		} else {
			f.Blob = ref
		}
	}
	return f
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
