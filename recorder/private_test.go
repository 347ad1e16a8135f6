package recorder

import (
	"os"
	"path/filepath"
	"testing"
)

// wantMode fails the test unless path exists with exactly the permission
// bits want.
func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

func TestTrajectoryFilesAndBlobsArePrivateToTheUser(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "project", ".retrace", "runs")
	rec, err := Create(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The file takes its name with its first event.
	rec.Emit(0, sessionStart())
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	blobs := OpenBlobs(BlobsDir(rec.Path()))
	_, blob, err := blobs.Put([]byte("a spilled output"))
	if err != nil {
		t.Fatal(err)
	}
	wantMode(t, runs, 0o700)
	wantMode(t, filepath.Dir(runs), 0o700) // a parent Create made
	wantMode(t, rec.Path(), 0o600)
	wantMode(t, blobs.Dir(), 0o700)
	wantMode(t, blob, 0o600)
}
