package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/retrace-dev/retrace/trajectory"
)

// Blobs is the content-addressed store beside a trajectory file
// (<session-id>.blobs/): spilled tool outputs and the files saved before a
// call changes them. Every byte stored goes through the store's Redactor
// first, so no secret a tool printed or a file held reaches the disk. A
// blob's name is the SHA-256 of what is stored — the redacted content —
// so storing the same content twice costs nothing and a reference can be
// checked against the bytes it names. The directory is created 0700 and
// the blobs 0600: they are as private as the session they belong to.
//
// A Blobs is safe for concurrent use.
type Blobs struct {
	dir string
	red *Redactor
	// redactions counts the secrets replaced by Put.
	redactions atomic.Int64
}

// BlobsDir returns the blob directory that belongs to a trajectory file.
func BlobsDir(trajectoryPath string) string {
	return strings.TrimSuffix(trajectoryPath, trajectory.Ext) + ".blobs"
}

// OpenBlobs returns the store in dir, redacting with DefaultRedactor; the
// directory is created on the first Put.
func OpenBlobs(dir string) *Blobs { return OpenBlobsWith(dir, nil) }

// OpenBlobsWith returns the store in dir, redacting with red (nil means
// DefaultRedactor): the Redactor the session's Recorder uses, so that the
// trajectory and its blobs lose the same secrets.
func OpenBlobsWith(dir string, red *Redactor) *Blobs {
	if red == nil {
		red = DefaultRedactor()
	}
	return &Blobs{dir: dir, red: red}
}

// Dir returns the store's directory.
func (b *Blobs) Dir() string { return b.dir }

// Redact returns content with its secrets replaced, exactly as Put would
// store it: what a caller must use before it cuts content short (a
// truncated output, a summary), since a cut secret is no longer
// recognised. Clean content is returned as is.
func (b *Blobs) Redact(content []byte) []byte {
	out, _ := b.red.Redact(content)
	return out
}

// Redactions returns how many secrets Put has replaced so far.
func (b *Blobs) Redactions() int64 { return b.redactions.Load() }

// Put redacts content, stores it and returns its reference
// (trajectory.BlobRef of the stored, redacted bytes) and the path of the
// file that holds it, which tools may read back.
func (b *Blobs) Put(content []byte) (ref, path string, err error) {
	out, n := b.red.Redact(content)
	b.redactions.Add(int64(n))
	return b.store(out)
}

// store writes content, already redacted or checked clean, under its hash.
func (b *Blobs) store(content []byte) (ref, path string, err error) {
	ref = trajectory.BlobRef(content)
	path = b.Path(ref)
	if _, err := os.Stat(path); err == nil {
		return ref, path, nil
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return "", "", fmt.Errorf("blob store %s: %w", b.dir, err)
	}
	// Write to a temporary name and rename, so a reader never sees half a
	// blob. CreateTemp makes the file 0600.
	tmp, err := os.CreateTemp(b.dir, ".tmp-*")
	if err != nil {
		return "", "", fmt.Errorf("blob store %s: %w", b.dir, err)
	}
	_, werr := tmp.Write(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", "", fmt.Errorf("blob store %s: %w", b.dir, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", "", fmt.Errorf("blob store %s: %w", b.dir, err)
	}
	return ref, path, nil
}

// Path returns where the blob with ref is (or would be) stored.
func (b *Blobs) Path(ref string) string {
	return filepath.Join(b.dir, strings.TrimPrefix(ref, "sha256:"))
}

// Get returns the content of the blob with ref. A missing blob is an error
// wrapping fs.ErrNotExist.
func (b *Blobs) Get(ref string) ([]byte, error) {
	if !trajectory.IsBlobRef(ref) {
		return nil, fmt.Errorf("blob reference %q: want sha256:<64 hex digits>", ref)
	}
	data, err := os.ReadFile(b.Path(ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is missing from %s: %w", ref, b.dir, fs.ErrNotExist)
	}
	return data, err
}
