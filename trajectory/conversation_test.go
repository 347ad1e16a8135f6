package trajectory

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func hashes(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Hash([]byte(n))
	}
	return out
}

// TestConversationEncodesChangesAndReadsThemBack walks a session through
// growth, a retry, a compaction (fewer kept) and a rewrite of one message,
// and checks that what Encode records is the change and that Next gives
// back every full list, with lists handed out earlier left intact.
func TestConversationEncodesChangesAndReadsThemBack(t *testing.T) {
	steps := []struct {
		name string
		full []string
		kept int
	}{
		{"first request", hashes("u1"), 0},
		{"grows", hashes("u1", "a1", "r1"), 1},
		{"identical retry", hashes("u1", "a1", "r1"), 3},
		{"grows again", hashes("u1", "a1", "r1", "a2", "r2"), 3},
		{"compaction keeps the first message", hashes("u1", "summary", "r3"), 1},
		{"a rewritten message", hashes("u1", "summary*", "r3", "a4"), 1},
		{"nothing kept", hashes("other"), 0},
		{"no messages", hashes(), 0},
	}
	var enc, dec Conversation
	var views [][]string
	for _, s := range steps {
		req := &ModelRequest{}
		if kept := enc.Encode(req, s.full); kept != s.kept || req.MessagesKept != s.kept {
			t.Fatalf("%s: kept %d (recorded %d), want %d", s.name, kept, req.MessagesKept, s.kept)
		}
		if !slices.Equal(req.MessageHashes, s.full[s.kept:]) || req.MessageHashes == nil {
			t.Fatalf("%s: message_hashes %v, want the %d after the kept prefix", s.name, req.MessageHashes, len(s.full)-s.kept)
		}
		if req.PrefixHash != PrefixHashOf(s.full) {
			t.Fatalf("%s: prefix_hash %s, want %s", s.name, req.PrefixHash, PrefixHashOf(s.full))
		}
		full, err := dec.Next(req)
		if err != nil || !slices.Equal(full, s.full) {
			t.Fatalf("%s: Next = %v, %v; want %v", s.name, full, err, s.full)
		}
		views = append(views, full)
	}
	for i, s := range steps {
		if !slices.Equal(views[i], s.full) {
			t.Errorf("%s: the list handed out earlier changed to %v", s.name, views[i])
		}
	}
	if PrefixHashOf(nil) != EmptyPrefixHash || dec.PrefixHash() != EmptyPrefixHash || dec.Len() != 0 {
		t.Errorf("an empty request's prefix hash is %s, want EmptyPrefixHash", dec.PrefixHash())
	}
}

// TestConversationReportsABrokenChain: a request that keeps more than
// there was, or whose prefix hash the chain does not give (a request
// lost between two), is reported with the field; a good chain is not.
func TestConversationReportsABrokenChain(t *testing.T) {
	var enc Conversation
	r1, r2, r3 := &ModelRequest{}, &ModelRequest{}, &ModelRequest{}
	enc.Encode(r1, hashes("u1"))
	enc.Encode(r2, hashes("u1", "a1", "r1"))
	enc.Encode(r3, hashes("u1", "a1", "r1", "a2", "r2"))

	var lost Conversation
	if _, err := lost.Next(r1); err != nil {
		t.Fatal(err)
	}
	// r2 is missing: r3 keeps 3 messages of a request with 1.
	_, err := lost.Next(r3)
	var fe *FieldError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &fe) || fe.Field != "messages_kept" {
		t.Fatalf("a request lost: got %v, want a messages_kept error", err)
	}

	var edited Conversation
	bad := *r2
	bad.MessageHashes = hashes("a1", "r1-edited")
	_, _ = edited.Next(r1)
	if _, err := edited.Next(&bad); !errors.Is(err, ErrPrefixMismatch) || !strings.Contains(err.Error(), "prefix_hash") {
		t.Fatalf("an edited message: got %v, want ErrPrefixMismatch naming prefix_hash", err)
	}
	// Still usable: the next request chains on what was recorded.
	var good Conversation
	for _, r := range []*ModelRequest{r1, r2, r3} {
		if _, err := good.Next(r); err != nil {
			t.Fatalf("a good chain reported %v", err)
		}
	}
}

// TestConversationReadsV1FullLists: a v1 request (no prefix_hash) is its
// own full list, and the chain it implies equals v2's for the same
// messages, so v1 and v2 recordings compare by prefix hash.
func TestConversationReadsV1FullLists(t *testing.T) {
	var c Conversation
	for _, full := range [][]string{hashes("u1"), hashes("u1", "a1", "r1"), hashes("x")} {
		got, err := c.Next(&ModelRequest{MessageHashes: full})
		if err != nil || !slices.Equal(got, full) || c.PrefixHash() != PrefixHashOf(full) {
			t.Fatalf("v1 %v: got %v, %v, prefix %s", full, got, err, c.PrefixHash())
		}
	}
}

// TestTheCheckerFollowsTheChain: validate reports a v2 session whose
// requests do not chain (one request line deleted), and not a good one.
func TestTheCheckerFollowsTheChain(t *testing.T) {
	evs := sampleSession("20261130-090000.000-0000c0de", 3)
	var good bytes.Buffer
	enc := NewEncoder(&good)
	for _, e := range evs {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ValidateStream(bytes.NewReader(good.Bytes()), "good")
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("good session: %v %v", err, rep.Problems)
	}
	// Change the second request's recorded prefix hash: the chain breaks
	// there and only there.
	var bad bytes.Buffer
	enc = NewEncoder(&bad)
	n := 0
	for _, e := range evs {
		if r, ok := e.Payload.(*ModelRequest); ok {
			if n++; n == 2 {
				c := *r
				c.PrefixHash = Hash([]byte("not the chain"))
				e.Payload = &c
			}
		}
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = ValidateStream(bytes.NewReader(bad.Bytes()), "bad")
	if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Error(), "invariant: messages") {
		t.Fatalf("broken chain: %v %v", err, rep.Problems)
	}
}

// TestV1RequestsRejectV2FieldsAndV2RequiresThePrefixHash keeps the two
// versions' model_request shapes apart.
func TestV1RequestsRejectV2FieldsAndV2RequiresThePrefixHash(t *testing.T) {
	ts := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	req := &ModelRequest{SystemHash: Hash(nil), ToolsHash: Hash(nil), ToolNames: []string{}, MessageHashes: []string{}, NewMessages: []Message{}}
	v2 := NewEvent("s", 1, ts, 1, req)
	if err := v2.Validate(); !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), "prefix_hash") {
		t.Fatalf("v2 without prefix_hash: %v", err)
	}
	req.PrefixHash = EmptyPrefixHash
	if err := v2.Validate(); err != nil {
		t.Fatalf("v2 with prefix_hash: %v", err)
	}
	v1 := v2
	v1.V = 1
	if err := v1.Validate(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "prefix_hash") {
		t.Fatalf("v1 with prefix_hash: %v", err)
	}
	req.PrefixHash = ""
	if err := v1.Validate(); err != nil {
		t.Fatalf("v1 without prefix_hash: %v", err)
	}
}

// TestV2FixturesAreTheV1FixturesUpgraded: every testdata/v2 file is the
// testdata/valid file of the same name written as v 2 (regenerate with
// -update), it validates, and every request's full message list is the
// v1 file's.
func TestV2FixturesAreTheV1FixturesUpgraded(t *testing.T) {
	for _, name := range []string{"basic", "parallel_batch", "defenses"} {
		v1 := readAll(t, filepath.Join("testdata", "valid", name+".jsonl"))
		var dec, enc Conversation
		var buf bytes.Buffer
		out := NewEncoder(&buf)
		var want [][]string
		for _, e := range v1 {
			if r, ok := e.Payload.(*ModelRequest); ok {
				full, err := dec.Next(r)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, full)
				e.Payload = Upgrade(r, full, &enc)
			}
			e.V = Version
			if err := out.Encode(e); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join("testdata", "v2", name+".jsonl")
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("%s is not %s upgraded (%v); regenerate with go test ./trajectory -run TestV2Fixtures -update", path, name, err)
		}
		rep, err := ValidateFile(path)
		if err != nil || len(rep.Problems) != 0 {
			t.Fatalf("%s: %v %v", path, err, rep.Problems)
		}
		evs := readAll(t, path)
		full, err := Full(evs)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		k := 0
		for i, e := range evs {
			if _, ok := e.Payload.(*ModelRequest); !ok {
				continue
			}
			if k >= len(want) || !slices.Equal(full[i], want[k]) {
				t.Fatalf("%s: request %d gives %v, the v1 file %v", path, k+1, full[i], want)
			}
			k++
		}
		if k != len(want) {
			t.Fatalf("%s: %d requests, want %d", path, k, len(want))
		}
	}
}

func readAll(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	dec := NewDecoder(f, path)
	for {
		e, err := dec.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return evs
			}
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
}
