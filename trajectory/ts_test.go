package trajectory

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// referenceTS is how the envelope's ts was decoded before parseTS: the
// JSON string, then time.Parse with RFC3339Nano, in UTC.
func referenceTS(raw []byte) (time.Time, error) {
	ts, err := jsonString("ts", raw)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, errors.New("bad time")
	}
	return t.UTC(), nil
}

// checkTS fails when parseTS and the reference disagree on raw: one
// accepts what the other refuses, or they give different times.
func checkTS(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := parseTS(raw)
	want, wantErr := referenceTS(raw)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%s: parseTS error %v, reference error %v", raw, gotErr, wantErr)
	}
	if !got.Equal(want) || got.Location() != want.Location() {
		t.Fatalf("%s: parseTS %v, reference %v", raw, got, want)
	}
}

// TestParseTSAgreesWithTimeParse covers the canonical form parseTS reads
// itself and its edges: out-of-range parts, leap days, fractions of every
// length, offsets and near misses that must go the reference way.
func TestParseTSAgreesWithTimeParse(t *testing.T) {
	for _, s := range []string{
		"2026-01-02T15:04:05Z", "2026-01-02T15:04:05.1Z", "2026-01-02T15:04:05.123456789Z",
		"2026-01-02T15:04:05.1234567891Z", "2026-01-02T15:04:05.Z", "2026-01-02T15:04:05,123Z",
		"2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
		"2026-01-02T24:00:00Z", "2026-01-02T23:60:00Z", "2026-01-02T23:59:60Z", "2026-01-02T23:59:59Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "2026-01-02T15:04:05z",
		"2026-01-02T15:04:05+02:00", "2026-01-02T15:04:05.5-07:30", "2026-01-02 15:04:05Z",
		"2026-01-02T15:04Z", "2026-1-02T15:04:05Z", "2026-01-02T5:04:05Z", "", "Z",
	} {
		checkTS(t, []byte(strconv.Quote(s)))
	}
	for _, raw := range []string{`2026-01-02T15:04:05Z`, `"2026-01-02T15:04:05Z`, `"\u0032026-01-02T15:04:05Z"`, `12`} {
		checkTS(t, []byte(raw))
	}
}

// FuzzParseTS checks parseTS against the reference on any value.
func FuzzParseTS(f *testing.F) {
	f.Add([]byte(`"2026-01-02T15:04:05.123Z"`))
	f.Add([]byte(`"2026-02-30T15:04:05Z"`))
	f.Fuzz(func(t *testing.T, raw []byte) { checkTS(t, raw) })
}

// TestPlainRun checks plainRun against a byte loop at every offset of
// strings with each kind of stop byte at each position of a word.
func TestPlainRun(t *testing.T) {
	slow := func(b []byte, j int) int {
		for ; j < len(b); j++ {
			if c := b[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				return j
			}
		}
		return j
	}
	for _, stop := range []byte{'"', '\\', 0, 0x1f, 0x80, 0xff, 0x7f, ' ', '!', '#', '[', ']'} {
		for n := 0; n < 40; n++ {
			for at := 0; at <= n; at++ {
				b := make([]byte, n)
				for k := range b {
					b[k] = 'a' + byte(k%26)
				}
				if at < n {
					b[at] = stop
				}
				for j := 0; j <= n; j++ {
					if got, want := plainRun(b, j), slow(b, j); got != want {
						t.Fatalf("stop %#x at %d of %d, from %d: got %d, want %d", stop, at, n, j, got, want)
					}
				}
			}
		}
	}
}
