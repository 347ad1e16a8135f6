package recorder

import (
	"bytes"
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

func TestBlobsPutRedactsAndNamesTheRedactedBytes(t *testing.T) {
	b := OpenBlobs(filepath.Join(t.TempDir(), "s.blobs"))
	content := []byte("$ env\nANTHROPIC_API_KEY=" + fakeAnthropicKey + "\nHOME=/home/alice\n")
	ref, path, err := b.Put(content)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(fakeAnthropicKey)) || !bytes.Contains(stored, []byte("[REDACTED:anthropic]")) {
		t.Fatalf("the stored blob is not redacted:\n%s", stored)
	}
	if !bytes.Equal(stored, b.Redact(content)) {
		t.Errorf("Put stored %q, Redact gives %q", stored, b.Redact(content))
	}
	if ref != trajectory.BlobRef(stored) || ref == trajectory.BlobRef(content) {
		t.Errorf("ref %s is not the hash of the stored bytes", ref)
	}
	if got, err := b.Get(ref); err != nil || !bytes.Equal(got, stored) {
		t.Errorf("Get = %q, %v", got, err)
	}
	if b.Redactions() != 1 {
		t.Errorf("Redactions = %d, want 1", b.Redactions())
	}
	clean := []byte("no secret here")
	if out := b.Redact(clean); &out[0] != &clean[0] {
		t.Error("Redact copied clean content")
	}
}

func TestBlobsOpenedWithARedactorUseItsPatterns(t *testing.T) {
	red, err := NewRedactor([]string{`corp-[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	b := OpenBlobsWith(filepath.Join(t.TempDir(), "s.blobs"), red)
	_, path, err := b.Put([]byte("ticket corp-123456 and key " + fakeAWSKeyID))
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := os.ReadFile(path)
	if string(stored) != "ticket [REDACTED:custom] and key [REDACTED:aws_access_key]" {
		t.Fatalf("stored %q", stored)
	}
}
