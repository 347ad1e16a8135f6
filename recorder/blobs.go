package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// Blobs is the content-addressed store beside a trajectory file
// (<session-id>.blobs/): spilled tool outputs and the files saved before a
// call changes them. A blob's name is its SHA-256, so storing the same
// content twice costs nothing and a reference can be checked against the
// bytes it names.
type Blobs struct {
	dir string
}

// BlobsDir returns the blob directory that belongs to a trajectory file.
func BlobsDir(trajectoryPath string) string {
	return strings.TrimSuffix(trajectoryPath, trajectory.Ext) + ".blobs"
}

// OpenBlobs returns the store in dir; the directory is created on the first Put.
func OpenBlobs(dir string) *Blobs { return &Blobs{dir: dir} }

// Dir returns the store's directory.
func (b *Blobs) Dir() string { return b.dir }

// Put stores content and returns its reference (trajectory.BlobRef) and the
// path of the file that holds it, which tools may read back.
func (b *Blobs) Put(content []byte) (ref, path string, err error) {
	ref = trajectory.BlobRef(content)
	path = b.Path(ref)
	if _, err := os.Stat(path); err == nil {
		return ref, path, nil
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return "", "", fmt.Errorf("blob store %s: %w", b.dir, err)
	}
	// Write to a temporary name and rename, so a reader never sees half a blob.
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
