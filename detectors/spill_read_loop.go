package detectors

import (
	"fmt"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// spillRereadMin is the default of spill_read_loop's min_repeats.
const spillRereadMin = 3

// spillHex is the digest a spill's path is named by: the BlobRef without
// its "sha256:" prefix (the blob store names its files so).
func spillHex(ref string) string { return strings.TrimPrefix(ref, "sha256:") }

// spill is one spilled output and what came after it.
type spill struct {
	ref    string
	origin Located // the tool_end that spilled it
	call   *trajectory.ToolCall
	sig    string
	// follow are the later calls that read the spill (their input names
	// its digest) or ran the spilled call again and spilled the same
	// output.
	follow []Located
	// sigs are the signatures of the origin and the follow-ups so far.
	sigs map[string]bool
	// repeats counts the follow-ups that brought nothing new: a read
	// truncated again or the same as a read before, a re-run with the same
	// output.
	repeats int
	// closed is set when a read of the spill was itself spilled to the
	// same blob: the model can never see what was spilled.
	closed bool
}

// spillReadLoop finds outputs that were truncated and spilled and then
// read back, or run again, without the model ever getting to see them:
// the read of the spill was spilled to the same blob (error: spilling
// and reading the spill make a loop), or min_repeats follow-ups were
// reads truncated again or repeating a read, or re-runs that spilled the
// same output again (warning). Paging
// through a spill with different offsets is what the notice asks for and
// does not count, nor does running the call again after a change and
// getting another output.
func spillReadLoop(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_repeats")
	var spills []*spill
	byRef := map[string]*spill{}
	calls := map[string]Located{}
	// reads maps a call that read a spill to it; reruns a call that ran a
	// spilled call again, which follows it only if it spilled the same
	// output (a re-run after a change, with a new output, is work).
	reads, reruns := map[string]*spill{}, map[string]*spill{}
	// counted are the reads counted as repeats, each once.
	counted := map[string]bool{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ToolCall:
			calls[p.ToolUseID] = e
			if len(spills) == 0 {
				// Nothing was spilled yet: no call can read or repeat a
				// spill.
				continue
			}
			sig := s.signature(p.Tool, p.Input)
			for _, sp := range spills {
				if sig == sp.sig {
					reruns[p.ToolUseID] = sp
					break
				}
				if !strings.Contains(string(p.Input), spillHex(sp.ref)) {
					continue
				}
				reads[p.ToolUseID] = sp
				sp.follow = append(sp.follow, e)
				if sp.sigs[sig] {
					counted[p.ToolUseID] = true
					sp.repeats++
				}
				sp.sigs[sig] = true
				break
			}
		case *trajectory.ToolEnd:
			if sp, ok := reads[p.ToolUseID]; ok {
				if p.Truncated && !counted[p.ToolUseID] {
					counted[p.ToolUseID] = true
					sp.repeats++
				}
				if p.Spill == sp.ref {
					sp.closed = true
				}
				continue
			}
			if sp, ok := reruns[p.ToolUseID]; ok && p.Spill == sp.ref {
				sp.follow = append(sp.follow, calls[p.ToolUseID])
				sp.repeats++
				continue
			}
			if !p.Truncated || p.Spill == "" || byRef[p.Spill] != nil {
				continue
			}
			at, ok := calls[p.ToolUseID]
			if !ok {
				continue
			}
			c := at.Payload.(*trajectory.ToolCall)
			sp := &spill{ref: p.Spill, origin: e, call: c, sig: s.signature(c.Tool, c.Input), sigs: map[string]bool{}}
			sp.sigs[sp.sig] = true
			spills = append(spills, sp)
			byRef[p.Spill] = sp
		}
	}
	var out []Finding
	for _, sp := range spills {
		if !sp.closed && sp.repeats < limit {
			continue
		}
		ev := []Located{sp.origin}
		ev = append(ev, sp.follow[:min(len(sp.follow), livenessEvidenceMax-1)]...)
		end := sp.origin.Payload.(*trajectory.ToolEnd)
		var msg string
		if sp.closed {
			msg = fmt.Sprintf("%s's output (%d bytes) was truncated and spilled to %s; %d later call(s) read the spill back, and the read was truncated and spilled to the same blob: the model can never see the spilled output",
				sp.call.Tool, end.OutputBytes, sp.ref, len(sp.follow))
		} else {
			msg = fmt.Sprintf("%s's output (%d bytes) was truncated and spilled to %s; %d later call(s) read the spill or ran the call again, %d of them bringing nothing new: a read truncated again or repeating a read, a re-run that spilled the same output (min_repeats %d)",
				sp.call.Tool, end.OutputBytes, sp.ref, len(sp.follow), sp.repeats, limit)
		}
		f := d.finding(s, msg, ev...)
		f.ToolUseID = sp.call.ToolUseID
		if sp.closed {
			f.Severity = SeverityError
		}
		out = append(out, f)
	}
	return out
}
