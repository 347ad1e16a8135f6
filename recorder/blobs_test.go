package recorder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestBlobsStoreContentByItsHashOnce(t *testing.T) {
	b := OpenBlobs(filepath.Join(t.TempDir(), "s.blobs"))
	ref, path, err := b.Put([]byte("full output"))
	if err != nil {
		t.Fatal(err)
	}
	if ref != trajectory.BlobRef([]byte("full output")) {
		t.Fatalf("ref %s is not the content's BlobRef", ref)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "full output" {
		t.Fatalf("file at %s holds %q (%v)", path, data, err)
	}
	ref2, path2, err := b.Put([]byte("full output"))
	if err != nil || ref2 != ref || path2 != path {
		t.Fatalf("second Put gave %s %s %v, want the same blob", ref2, path2, err)
	}
	got, err := b.Get(ref)
	if err != nil || string(got) != "full output" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if _, err := b.Get(trajectory.BlobRef([]byte("other"))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing blob: err = %v, want fs.ErrNotExist", err)
	}
	if BlobsDir("/runs/abc.jsonl") != "/runs/abc.blobs" {
		t.Fatalf("BlobsDir = %s", BlobsDir("/runs/abc.jsonl"))
	}
}
