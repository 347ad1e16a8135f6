package compare

import (
	"fmt"

	"github.com/retrace-dev/retrace/trajectory"
)

// Requests holds the model requests of a recorded session so that requests
// sent later can be compared with them one at a time, as mock serve --from
// does while an agent talks to it. It is not safe for concurrent use.
type Requests struct {
	c    *comparer
	rec  *session
	reqs []modelCall
}

// NewRequests indexes the model requests of recorded.
func NewRequests(recorded []trajectory.Event, opts Options) *Requests {
	rn := newNormalizer(opts)
	rec := index(recorded)
	rec.n = rn
	c := &comparer{rn: rn, pn: rn.other(), tools: map[string]string{}}
	for id, cl := range rec.calls {
		c.tools[id] = cl.tool
	}
	r := &Requests{c: c, rec: rec}
	r.reqs = rec.requests
	return r
}

// Len is the number of recorded requests.
func (r *Requests) Len() int { return len(r.reqs) }

// Compare compares sent with the i-th recorded request (from 0) in the
// order a provider caches a request — system prompt, tools, messages,
// max_tokens — after normalisation, and returns the first difference.
// sent must carry every message it hashes (NewMessages from the first),
// so that a message whose hash differs can be normalised; the returned
// Divergence has no turn. A request past the recording is a call_extra.
func (r *Requests) Compare(i int, sent *trajectory.ModelRequest) (Divergence, bool) {
	if i < 0 || i >= len(r.reqs) {
		d := Divergence{Class: ClassCallExtra, Field: "model_request", Recorded: "absent", Replayed: "present",
			Detail: fmt.Sprintf("the recording has only %d requests", len(r.reqs))}
		d.Summary = d.Detail
		return d, false
	}
	side := &session{messages: map[string]trajectory.Message{}, systems: map[string]string{},
		normalized: map[string]string{}, n: r.c.pn}
	if sent.System != "" {
		side.systems[sent.SystemHash] = sent.System
	}
	first := len(sent.MessageHashes) - len(sent.NewMessages)
	for j, m := range sent.NewMessages {
		if first+j >= 0 {
			side.messages[sent.MessageHashes[first+j]] = m
		}
	}
	// sent stands alone: its full list is its own (a fresh chain).
	var conv trajectory.Conversation
	msgs, _ := conv.Next(sent)
	d, same := r.c.diffRequest(r.rec, side, r.reqs[i], modelCall{req: sent, msgs: msgs})
	if same {
		return Divergence{}, true
	}
	d.Class = ClassRequestPrefix
	if textField(d.Field) {
		d.Diff = unifiedDiff(d.Recorded, d.Replayed)
	}
	d.Summary = summarize(d)
	d.Recorded, d.Replayed = r.c.rn.short(d.Recorded), r.c.rn.short(d.Replayed)
	return d, false
}
