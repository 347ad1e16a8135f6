package permission

import (
	"path/filepath"
	"testing"
)

func TestReadsBelowAnAllowedDirectoryNeedNoConfirmationButWritesStayDenied(t *testing.T) {
	ws, blobs := t.TempDir(), t.TempDir()
	c, err := New(Config{Home: t.TempDir()}, ws)
	if err != nil {
		t.Fatal(err)
	}
	spill := filepath.Join(blobs, "abc")
	read := Request{ToolUseID: "t1", Tool: "read", ReadOnly: true, Paths: []Access{{Path: spill}}}
	if d := c.Check(read); d.Behavior != Ask {
		t.Fatalf("before AllowReads: %+v, want ask for a read outside the workspace", d)
	}
	c.AllowReads(blobs)
	if d := c.Check(read); d.Behavior != Allow {
		t.Fatalf("after AllowReads: %+v, want allow", d)
	}
	write := Request{ToolUseID: "t2", Tool: "write", Paths: []Access{{Path: spill, Write: true}}}
	if d := c.Check(write); d.Behavior != Deny {
		t.Fatalf("write below an allowed read directory: %+v, want deny", d)
	}
}
