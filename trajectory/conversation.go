package trajectory

import (
	"errors"
	"fmt"
	"slices"
)

// ErrPrefixMismatch means a v2 model_request's prefix_hash disagrees with
// the message hashes the session's requests give: a request was lost,
// reordered or edited, or the writer chained the hashes wrongly.
var ErrPrefixMismatch = errors.New("prefix hash mismatch")

// EmptyPrefixHash is the prefix hash of a request with no messages: the
// start of every session's chain.
var EmptyPrefixHash = Hash(nil)

// ChainHash extends a prefix hash by one message: the prefix hash of the
// messages m1..mn is ChainHash(prefix hash of m1..mn-1, hash of mn), with
// EmptyPrefixHash for no messages. Hashing the two 16-digit hex strings
// one after the other is the whole rule, so any reader can recompute it.
func ChainHash(prefix, messageHash string) string {
	var b [32]byte
	copy(b[:16], prefix)
	copy(b[16:], messageHash)
	return Hash(b[:])
}

// PrefixHashOf returns the prefix hash of a full message-hash list.
func PrefixHashOf(hashes []string) string {
	p := EmptyPrefixHash
	for _, h := range hashes {
		p = ChainHash(p, h)
	}
	return p
}

// Conversation follows the messages of one session's model requests, in
// order, in either contract version, and is the one way every writer and
// reader goes between a request's full message-hash list and what a v2
// model_request records (see the package doc, "Linear requests"):
//
//   - v2: messages_kept leading messages of the previous request are kept
//     unchanged, message_hashes are the hashes of the messages after them,
//     and prefix_hash chains over the full list (ChainHash), so a reader
//     verifies the whole prefix with one comparison;
//   - v1: message_hashes is the full list (no prefix_hash).
//
// Writers call Encode with each request's full list; readers call Next
// with each recorded request and get its full list back. The zero value is
// a session that has sent no request yet. A Conversation is not safe for
// concurrent use.
type Conversation struct {
	// hashes is the full list of the previous request. Its backing array
	// is only ever appended to past the length of any list handed out;
	// a request that keeps fewer messages gets a fresh array, so the lists
	// Next returned earlier stay valid and unchanged.
	hashes []string
	// chain[i] is the prefix hash of hashes[:i]; len(chain) == len(hashes)+1.
	chain []string
}

func (c *Conversation) start() {
	if c.chain == nil {
		c.chain = append(make([]string, 0, 16), EmptyPrefixHash)
	}
}

// keep cuts the list to its first n messages without touching the
// elements earlier views see.
func (c *Conversation) keep(n int) {
	if n >= len(c.hashes) {
		return
	}
	c.hashes = append(make([]string, 0, n+16), c.hashes[:n]...)
	c.chain = append(make([]string, 0, n+17), c.chain[:n+1]...)
}

func (c *Conversation) push(hashes []string) {
	for _, h := range hashes {
		c.hashes = append(c.hashes, h)
		c.chain = append(c.chain, ChainHash(c.chain[len(c.chain)-1], h))
	}
}

// shared returns how many leading hashes of full equal the previous
// request's.
func (c *Conversation) shared(full []string) int {
	n := 0
	for n < len(c.hashes) && n < len(full) && c.hashes[n] == full[n] {
		n++
	}
	return n
}

// view returns the current full list; appending to it never writes into
// the Conversation's storage.
func (c *Conversation) view() []string {
	return c.hashes[:len(c.hashes):len(c.hashes)]
}

// Len returns the number of messages of the previous request.
func (c *Conversation) Len() int { return len(c.hashes) }

// PrefixHash returns the prefix hash of the previous request's messages
// (EmptyPrefixHash before the first request).
func (c *Conversation) PrefixHash() string {
	if len(c.chain) == 0 {
		return EmptyPrefixHash
	}
	return c.chain[len(c.chain)-1]
}

// Encode fills the message fields of req, a v2 model_request whose
// messages have the hashes full (in order), relative to the previous
// request Encode saw: MessagesKept is the longest prefix full shares with
// it, MessageHashes the hashes after that prefix and PrefixHash the chain
// over full. It returns MessagesKept, so the caller records the content of
// the messages from there on as NewMessages.
func (c *Conversation) Encode(req *ModelRequest, full []string) int {
	c.start()
	kept := c.shared(full)
	c.keep(kept)
	c.push(full[kept:])
	req.MessagesKept = kept
	req.MessageHashes = append(make([]string, 0, len(full)-kept), full[kept:]...)
	req.PrefixHash = c.PrefixHash()
	return kept
}

// Next takes the next recorded model_request of the session, of either
// version, and returns the hashes of all its messages, in order. The list
// is shared: callers may keep it but must not modify it.
//
// A v2 request that keeps more messages than the previous request had, or
// whose prefix_hash the chain does not reproduce, gives an error wrapping
// ErrMalformed or ErrPrefixMismatch (a *FieldError naming the field) and
// the best list it can: the kept count is clamped, the hashes it recorded
// are appended. The Conversation stays usable for the next request.
func (c *Conversation) Next(req *ModelRequest) ([]string, error) {
	c.start()
	if req.PrefixHash == "" { // v1: message_hashes is the full list
		kept := c.shared(req.MessageHashes)
		c.keep(kept)
		c.push(req.MessageHashes[kept:])
		return c.view(), nil
	}
	var err error
	kept := req.MessagesKept
	if kept < 0 || kept > len(c.hashes) {
		err = &FieldError{Field: "messages_kept", Err: ErrMalformed,
			Detail: fmt.Sprintf("keeps %d messages but the previous request of the session had %d", kept, len(c.hashes))}
		kept = min(max(kept, 0), len(c.hashes))
	}
	c.keep(kept)
	c.push(req.MessageHashes)
	if got := c.PrefixHash(); err == nil && got != req.PrefixHash {
		err = &FieldError{Field: "prefix_hash", Err: ErrPrefixMismatch,
			Detail: fmt.Sprintf("recorded %s, but the session's requests give %s for these %d messages", req.PrefixHash, got, len(c.hashes))}
	}
	return c.view(), err
}

// Full returns the full message-hash list of every model_request among
// events (in file order), keyed by the index of the event in events, and
// the first error Next reported (the lists are complete anyway). A
// session_start starts a new chain, so the events of several sessions
// may be given one after the other. It is Next over whole sessions, for
// readers that hold them.
func Full(events []Event) (map[int][]string, error) {
	var c Conversation
	var first error
	out := map[int][]string{}
	for i, e := range events {
		if _, ok := e.Payload.(*SessionStart); ok {
			c = Conversation{}
		}
		if p, ok := e.Payload.(*ModelRequest); ok {
			full, err := c.Next(p)
			if err != nil && first == nil {
				first = fmt.Errorf("seq %d: %w", e.Seq, err)
			}
			out[i] = full
		}
	}
	return out, first
}

// Upgrade returns req in v2 form: a copy whose message fields enc encodes
// from full (req's full message-hash list, from Conversation.Next)
// relative to the previous request enc encoded. Tools that rewrite a
// trajectory (a v1 file written again as v2, a request edited in place)
// re-chain each request with it. Content of messages the copy now keeps
// is dropped from NewMessages: earlier requests carry it.
func Upgrade(req *ModelRequest, full []string, enc *Conversation) *ModelRequest {
	out := *req
	out.MessageHashes = nil
	enc.Encode(&out, full)
	out.NewMessages = slices.Clone(req.NewMessages)
	if len(out.NewMessages) > len(out.MessageHashes) {
		// The v1 request carried content of messages it now keeps: the
		// kept ones are in earlier requests already.
		out.NewMessages = out.NewMessages[len(out.NewMessages)-len(out.MessageHashes):]
	}
	return &out
}
