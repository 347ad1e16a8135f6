package detectors

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// reminderCapDefault is the default of max_per_kind: the runtime's own
// cap on reminders of one kind in a session (agent's maxRemindersPerKind).
const reminderCapDefault = 3

// openTag matches an opening XML-like tag; labelled keeps those whose
// name says the text inside is the harness's, not the user's
// (<harness-reminder>, <system-reminder>).
var openTag = regexp.MustCompile(`<([A-Za-z][\w-]*)(?:\s[^>]*)?>`)

// phantomUserMessage finds harness text the model may take for the
// user's: a reminder with the user role whose text reaches
// the next request without a harness label around it; a reminder injected
// again while the first one is still in the context (the same dedup_key,
// or the same text when there is no key); and more than max_per_kind
// reminders of one kind in a session.
//
// A reminder whose text the next request does not carry is not judged
// for its label (not observable). Only a compaction that removed messages
// or summarised them takes a reminder out of the context.
func phantomUserMessage(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("max_per_kind")
	var out []Finding
	seen := map[string]Located{}
	perKind := map[string][]Located{}
	var kinds []string
	for i, e := range s.Events {
		switch pl := e.Payload.(type) {
		case *trajectory.Compaction:
			if pl.Strategy == trajectory.CompactSummarize || pl.MessagesAfter < pl.MessagesBefore {
				seen = map[string]Located{}
			}
		case *trajectory.Reminder:
			if pl.Role != trajectory.RoleUser {
				continue
			}
			if perKind[pl.Kind] == nil {
				kinds = append(kinds, pl.Kind)
			}
			perKind[pl.Kind] = append(perKind[pl.Kind], e)
			key := pl.DedupKey
			what := "dedup_key " + pl.DedupKey
			if key == "" {
				key, what = "text\x00"+pl.Text, "the same text (no dedup_key)"
			}
			if first, ok := seen[key]; ok {
				out = append(out, d.finding(s, fmt.Sprintf("a %s reminder with %s was injected again at turn %d while the one of turn %d is still in the context: the model reads the user saying it twice",
					pl.Kind, what, e.Turn, first.Turn), e, first))
			} else {
				seen[key] = e
			}
			if req, ok := nextRequest(s, i+1); ok && pl.Text != "" {
				if block, found := carried(req.Payload.(*trajectory.ModelRequest), pl.Text); found && !labelled(block, pl.Text) {
					out = append(out, d.finding(s, fmt.Sprintf("the %s reminder of turn %d reached the model as user text with no harness label around it (%d bytes): the model cannot tell it from what the user said",
						pl.Kind, e.Turn, len(pl.Text)), e, req))
				}
			}
		}
	}
	for _, k := range kinds {
		if rs := perKind[k]; len(rs) > limit {
			out = append(out, d.finding(s, fmt.Sprintf("%d %s reminders were injected with the user role in this session (max_per_kind %d): past the cap the model comes to believe the user asked again and again",
				len(rs), k, limit), rs[limit:]...))
		}
	}
	return out
}

// nextRequest returns the first model_request from index from on.
func nextRequest(s *Session, from int) (Located, bool) {
	for _, e := range s.Events[from:] {
		if e.Type() == trajectory.TypeModelRequest {
			return e, true
		}
	}
	return Located{}, false
}

// carried returns the text block of a user message of req that holds
// text.
func carried(req *trajectory.ModelRequest, text string) (string, bool) {
	for _, m := range req.NewMessages {
		if m.Role != trajectory.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type == trajectory.BlockText && strings.Contains(b.Text, text) {
				return b.Text, true
			}
		}
	}
	return "", false
}

// labelled reports whether text sits inside a harness tag in block: an
// opening tag before it and its closing tag after it.
func labelled(block, text string) bool {
	at := strings.Index(block, text)
	for _, m := range openTag.FindAllStringSubmatchIndex(block[:at], -1) {
		name := block[m[2]:m[3]]
		low := strings.ToLower(name)
		if !strings.Contains(low, "reminder") && !strings.Contains(low, "harness") && !strings.Contains(low, "system") {
			continue
		}
		if strings.Contains(block[at+len(text):], "</"+name+">") {
			return true
		}
	}
	return false
}
