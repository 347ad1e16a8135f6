// Package terminal makes text that a model or a tool wrote safe to print
// on a terminal, in a CI log or in a GitHub workflow log.
//
// Such text is untrusted: a model reply, a tool output, a file name or a
// scenario's failure reason may hold escape sequences that clear the
// screen, move the cursor, set the window title or hide text (ESC, CSI,
// OSC), a carriage return that overwrites what a line said, a bell, C1
// controls (U+0080–U+009F, which some terminals obey like ESC [), bidi
// overrides that make a line read differently from what it holds, or a
// line that starts with :: and so is a GitHub workflow command (::error,
// ::add-mask, ::stop-commands). Every printer in retrace passes such text
// through Text or Line before writing it, so what reaches the terminal is
// the text shown, never the text obeyed.
//
// What is unsafe is shown escaped, in the notation of Go and JSON strings,
// so a reader still sees it was there: ESC as \x1b, CR as \r, BEL as \x07,
// a C1 control or a bidi override as \u0085 or \u202e, a byte that is not
// UTF-8 as \xff, and a backslash that starts one of these spellings is not
// doubled (the text is for reading, not for decoding back). A leading ::
// (or ##[ and ##vso[, the older spellings) becomes \x3a: (\x23#[), which
// no runner takes for a command.
package terminal

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text returns s safe to print: control characters other than newline and
// tab, C1 controls, bidi and other invisible formatting characters and
// bytes that are not UTF-8 are escaped, and no line starts a workflow
// command. Newlines and tabs are kept, for multi-line output.
func Text(s string) string { return sanitize(s, false, true) }

// Line is Text for one line: a name, a cell, a message. Newlines and tabs
// are escaped too (\n, \t), so the text cannot start a line of its own.
func Line(s string) string { return sanitize(s, true, true) }

// sanitize is Text and Line. It returns s itself when nothing needs
// escaping, the common case, without allocating.
// atLineStart says whether s starts a line, which a write that continues
// one does not.
func sanitize(s string, line, atLineStart bool) string {
	if clean(s, line, atLineStart) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		if atLineStart {
			// A workflow command is a line that starts with :: (or the
			// old ##[ / ##vso[), after any spaces the runner trims. A
			// Markdown heading (## x) is not one.
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			switch {
			case strings.HasPrefix(s[j:], "::"):
				b.WriteString(escapeSpaces(s[i:j], line))
				b.WriteString(`\x3a`)
				i = j + 1
			case strings.HasPrefix(s[j:], "##[") || strings.HasPrefix(s[j:], "##vso["):
				b.WriteString(escapeSpaces(s[i:j], line))
				b.WriteString(`\x23`)
				i = j + 1
			}
			atLineStart = false
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && !line:
			b.WriteByte('\n')
			atLineStart = true
		case r == '\t' && !line:
			b.WriteByte('\t')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func escapeSpaces(s string, line bool) string {
	if line {
		return strings.ReplaceAll(s, "\t", `\t`)
	}
	return s
}

// clean reports whether s needs no escaping: printable ASCII (with
// newlines and tabs unless line), valid UTF-8 without unsafe runes, and
// no line that starts like a workflow command.
func clean(s string, line, start bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if start {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if strings.HasPrefix(s[j:], "::") || strings.HasPrefix(s[j:], "##[") || strings.HasPrefix(s[j:], "##vso[") {
				return false
			}
			start = false
		}
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' && !line:
				start = true
			case c == '\t' && !line:
			case c < 0x20 || c == 0x7f:
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune reports the non-ASCII runes a terminal may obey or that
// change how a line reads without showing: C1 controls, bidi embeddings,
// overrides, isolates and marks, zero-width characters, the line and
// paragraph separators and the byte order mark.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls (CSI is U+009B)
		return true
	case r >= 0x200b && r <= 0x200f: // zero-width space, joiners, LRM, RLM
		return true
	case r >= 0x2028 && r <= 0x202e: // separators, bidi embeddings and overrides
		return true
	case r >= 0x2060 && r <= 0x2069: // word joiner, invisible operators, bidi isolates
		return true
	case r == 0x061c || r == 0xfeff: // Arabic letter mark, BOM
		return true
	}
	return false
}

// A Writer passes every write through Text on its way to the underlying
// writer, for output that is all text meant for people or for a CI log
// (a table, a report, a transcript). It remembers whether the last write
// ended a line, so a workflow command split from its newline by two writes
// is still caught. Each write should hold whole characters, as fmt's do.
type Writer struct {
	w       io.Writer
	midLine bool
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer. It reports len(p) written when the
// sanitised text was written whole.
func (t *Writer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s := string(p)
	out := sanitize(s, false, !t.midLine)
	t.midLine = s[len(s)-1] != '\n'
	if _, err := io.WriteString(t.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
