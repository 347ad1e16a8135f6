package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"
)

// maxDiffLines bounds a divergence's unified diff; the full values are in
// the trajectories.
const maxDiffLines = 80

// sideRunes is how much of each side a row's description shows.
const sideRunes = 40

// textField reports whether a divergence's field holds text worth a
// unified diff: tool output and input, messages, replies, the system prompt.
func textField(field string) bool {
	return field == "text" || field == "input" || field == "content" || field == "system" ||
		strings.HasPrefix(field, "messages[")
}

// unifiedDiff is the unified diff of two normalised values, JSON shown
// indented with its strings' newlines as lines, so a change in one line of
// a tool's output reads as that line; cut after maxDiffLines lines.
func unifiedDiff(a, b string) string {
	a, b = readable(a), readable(b)
	if a == b {
		return ""
	}
	if !strings.HasSuffix(a, "\n") {
		a += "\n"
	}
	if !strings.HasSuffix(b, "\n") {
		b += "\n"
	}
	d, err := udiff.ToUnified("recorded", "replayed", a, udiff.Lines(a, b), udiff.DefaultContextLines)
	if err != nil {
		return ""
	}
	text := d
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > maxDiffLines+1 {
		text = strings.Join(lines[:maxDiffLines], "") +
			fmt.Sprintf("… (%d more diff lines; the full values are in the trajectories)\n", len(lines)-maxDiffLines-1)
	}
	return text
}

// readable renders a JSON value indented, with the newlines inside its
// strings shown as line breaks; other text is left as it is. It is for a
// person's eyes only, never compared.
func readable(s string) string {
	t := strings.TrimSpace(s)
	if !(strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) || !json.Valid([]byte(t)) {
		return s
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(t), "", "  "); err != nil {
		return s
	}
	// A literal backslash keeps its escape; only \n becomes a line break.
	return strings.NewReplacer(`\\`, `\\`, `\n`, "\n", `\t`, "\t").Replace(b.String())
}

// summarize describes a divergence in one short line for its row: where a
// text first differs and how each side reads there, or the field with
// both values.
func summarize(d Divergence) string {
	switch {
	case d.Detail == DetailLaterRequests:
		return "later requests differ because of the change above; not compared further"
	case d.Recorded == "" && d.Replayed == "":
		return d.Detail
	case textField(d.Field):
		line, a, b := firstDifference(readable(d.Recorded), readable(d.Replayed))
		return fmt.Sprintf("%s%s line %d: %s → %s", label(d.Field), cacheWords(d.Detail), line, quote(a), quote(b))
	case d.Class == ClassRequestPrefix:
		return fmt.Sprintf("%s%s: %s → %s", d.Field, cacheWords(d.Detail), cut(d.Recorded, sideRunes), cut(d.Replayed, sideRunes))
	}
	return fmt.Sprintf("%s: %s → %s", label(d.Field), cut(d.Recorded, sideRunes), cut(d.Replayed, sideRunes))
}

// label names a field the way a person reads it.
func label(field string) string {
	switch field {
	case "text":
		return "output"
	case "content":
		return "reply"
	}
	return field
}

func cacheWords(detail string) string {
	switch {
	case strings.Contains(detail, "breaks the prompt cache"):
		return " (breaks the prompt cache)"
	case strings.Contains(detail, "prompt cache still holds"):
		return " (the prompt cache holds)"
	}
	return ""
}

// quote puts a window of text in quotes without escaping it: the row is
// for a person, and oneLine already keeps it on one line.
func quote(s string) string { return `"` + s + `"` }

// firstDifference returns the line where a and b first differ (from 1)
// and a window of each side from a little before that point, cut to
// sideRunes.
func firstDifference(a, b string) (line int, wa, wb string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	// Step back to a rune boundary so the window never starts mid-rune.
	for i > 0 && (i < len(a) && !utf8.RuneStart(a[i]) || i < len(b) && !utf8.RuneStart(b[i])) {
		i--
	}
	line = strings.Count(a[:i], "\n") + 1
	start := strings.LastIndexByte(a[:i], '\n') + 1
	// A short line is shown from its start; a long one from a little
	// before the change.
	if i-start > sideRunes-12 {
		start = i - 12
		for start < i && !utf8.RuneStart(a[start]) {
			start++
		}
	}
	window := func(s string) string {
		w := s[start:]
		if j := strings.IndexByte(w, '\n'); j >= 0 {
			w = w[:j]
		}
		atLineStart := start == 0 || s[start-1] == '\n'
		if atLineStart {
			// Indentation says nothing about what changed.
			w = strings.TrimLeft(w, " \t")
		}
		w = cut(w, sideRunes)
		if !atLineStart {
			w = "…" + w
		}
		return w
	}
	return line, window(a), window(b)
}
