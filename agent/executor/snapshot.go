package executor

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/tools"
)

// maxSnapshotFile is the largest file a snapshot saves; a bigger one is
// listed without content so that one huge file cannot fill the disk.
const maxSnapshotFile = 32 << 20

// snapshotManifest is the blob that records what a mutating call was about
// to change. Its summary names the trigger — the command, not just the file
// list — so the right snapshot can be picked later (seed §5.4).
type snapshotManifest struct {
	ToolUseID string         `json:"tool_use_id"`
	Tool      string         `json:"tool"`
	Summary   string         `json:"summary"`
	Files     []snapshotFile `json:"files"`
}

type snapshotFile struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	// Blob is the BlobRef of the file's content before the call.
	Blob string `json:"blob,omitempty"`
	// Skipped says why the content was not saved (too_large, unreadable,
	// secret: the file holds a secret, which is never stored).
	Skipped string `json:"skipped,omitempty"`
}

// snapshot runs stage 2 just before the tool does: after the hooks and the
// permission chain, because a hook may change which file the call writes
// and a denied call changes nothing. It returns the manifest's BlobRef, or
// "" when the call writes no file. A failed snapshot never fails the call.
func (c *call) snapshot(input json.RawMessage) string {
	var paths []string
	summary := c.name
	if pt, ok := c.tool.(tools.PathTool); ok {
		for _, a := range pt.Paths(input) {
			if a.Write {
				paths = append(paths, a.Path)
				summary = c.name + " " + a.Path
			}
		}
	}
	if ct, ok := c.tool.(tools.CommandTool); ok {
		cmd := ct.Command(input)
		paths = append(paths, shell.Analyze(cmd).Writes...)
		// Redacted before the cut below, which would leave a piece of a
		// secret that Put no longer recognises.
		summary = string(c.ex.cfg.Blobs.Redact([]byte(cmd)))
		if len(summary) > 200 {
			summary = summary[:200] + "…"
		}
	}
	if len(paths) == 0 {
		return ""
	}
	m := snapshotManifest{ToolUseID: c.id, Tool: c.name, Summary: summary}
	env := c.ex.cfg.Env
	for _, p := range paths {
		abs := env.Abs(p)
		f := snapshotFile{Path: abs}
		info, err := os.Stat(abs)
		switch {
		case err != nil && os.IsNotExist(err):
		case err != nil:
			f.Existed, f.Skipped = true, "unreadable"
		case !info.Mode().IsRegular():
			f.Existed, f.Skipped = true, "not_a_file"
		case info.Size() > maxSnapshotFile:
			f.Existed, f.Skipped = true, "too_large"
		default:
			f.Existed = true
			if data, err := os.ReadFile(abs); err != nil {
				f.Skipped = "unreadable"
			} else if red := c.ex.cfg.Blobs.Redact(data); !bytes.Equal(red, data) {
				// Stored redacted, the file would be restored different
				// from what it was without a word; not stored, the
				// manifest says so (the workspace snapshot does the same).
				f.Skipped = "secret"
			} else if ref, _, err := c.ex.cfg.Blobs.Put(data); err != nil {
				f.Skipped = "store_failed"
			} else {
				f.Blob = ref
			}
		}
		m.Files = append(m.Files, f)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	ref, _, err := c.ex.cfg.Blobs.Put(data)
	if err != nil {
		return ""
	}
	return ref
}
