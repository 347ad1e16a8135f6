package recorder

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// KeyFile is the name of the user's recording key in the user's retrace
// configuration directory (beside retrace.yaml).
const KeyFile = "recording.key"

// signaturePrefix starts every Signature, naming its algorithm.
const signaturePrefix = "hmac-sha256:"

// keyBytes is the size of a recording key.
const keyBytes = 32

// Key signs the session_start of every session a user records (retrace
// run, retrace eval --out, a replay), so that a replay can tell the user's
// own recordings from someone else's: a recording whose signature checks
// with the user's key was made by this user on this machine, and a replay
// applies its permission mode and allow rules. The key never leaves the
// user's configuration directory and is never written into a recording.
type Key struct {
	secret []byte
}

// UserKey returns the recording key of the user whose configuration
// directory (os.UserConfigDir) is dir: dir/retrace/recording.key, made
// with 32 random bytes and mode 0600 on first use. A key file that is not
// the user's alone (readable by others) is refused, since anyone who can
// read it can sign a recording as the user.
func UserKey(dir string) (*Key, error) {
	if dir == "" {
		return nil, errors.New("recorder: no user configuration directory for the recording key")
	}
	path := filepath.Join(dir, "retrace", KeyFile)
	k, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("recorder: recording key: %w", err)
	}
	secret := make([]byte, keyBytes)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("recorder: recording key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another retrace made it first: use that one.
		return readKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("recorder: recording key: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(secret) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("recorder: recording key %s: %w", path, err)
	}
	return &Key{secret: secret}, nil
}

// readKey reads the key at path.
func readKey(path string) (*Key, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("recorder: recording key %s has mode %v: others can read it, so it proves nothing; make it the user's alone (chmod 600) or remove it for a new one", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("recorder: recording key: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) < keyBytes {
		return nil, fmt.Errorf("recorder: recording key %s is damaged; remove it and retrace makes a new one (recordings signed with the old one are then no longer recognised as yours)", path)
	}
	return &Key{secret: secret}, nil
}

// Sign returns the signature of start, session's session_start: the HMAC
// of its JSON with Signature left empty, and of the session id.
func (k *Key) Sign(session string, start *trajectory.SessionStart) (string, error) {
	c := *start
	c.Signature = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("recorder: sign session_start: %w", err)
	}
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write(b)
	return signaturePrefix + hex.EncodeToString(m.Sum(nil)), nil
}

// Verify reports whether start, as read from session's recording, carries
// this key's signature: the recording was made by this key's user and its
// session_start was not changed since.
func (k *Key) Verify(session string, start *trajectory.SessionStart) bool {
	if k == nil || start == nil || !strings.HasPrefix(start.Signature, signaturePrefix) {
		return false
	}
	want, err := k.Sign(session, start)
	return err == nil && hmac.Equal([]byte(want), []byte(start.Signature))
}
