package recorder

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// sessionTimeLayout puts the UTC start time first, with fixed widths, so that
// ids sort as text in start order.
const sessionTimeLayout = "20060102-150405.000"

// NewSessionID returns a new session id for a session started at t, such as
// "20261130-002824.123-2df54593": the UTC time to the millisecond and 8 random
// hex digits. Ids of sessions started at increasing times sort in that order;
// the random part keeps ids of sessions started in the same millisecond apart.
func NewSessionID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return SessionID(t, b)
}

// SessionID returns the session id of a session started at t with the
// given 4 bytes as its distinguishing part; NewSessionID draws them at
// random, a generator that must be reproducible (package synth) from its
// own source.
func SessionID(t time.Time, suffix [4]byte) string {
	return t.UTC().Format(sessionTimeLayout) + "-" + hex.EncodeToString(suffix[:])
}
