package terminal

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextEscapesWhatATerminalWouldObey(t *testing.T) {
	tests := []struct {
		name, in, text, line string
	}{
		{"plain text is kept", "ok: 3 tests passed", "ok: 3 tests passed", "ok: 3 tests passed"},
		{"newlines and tabs are kept by Text and escaped by Line", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"clear screen and cursor home", "x\x1b[2J\x1b[H", `x\x1b[2J\x1b[H`, `x\x1b[2J\x1b[H`},
		{"an OSC that sets the title, ended by BEL", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"a carriage return that overwrites the line", "rm -rf /\rls", `rm -rf /\rls`, `rm -rf /\rls`},
		{"a C1 CSI and NEL", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`, `a\u009b2Jb\u0085`},
		{"a bidi override and isolate", "txt\u202egnp.exe\u2066", `txt\u202egnp.exe\u2066`, `txt\u202egnp.exe\u2066`},
		{"bytes that are not UTF-8", "a\xff\xfeb", `a\xff\xfeb`, `a\xff\xfeb`},
		{"DEL and NUL", "a\x7fb\x00", `a\x7fb\x00`, `a\x7fb\x00`},
		{"a workflow command at the start", "::error file=x::owned", `\x3a:error file=x::owned`, `\x3a:error file=x::owned`},
		{"a workflow command on a later line, after spaces", "ok\n  ::add-mask::x", "ok\n  \\x3a:add-mask::x", `ok\n  ::add-mask::x`},
		{"an old-style command", "##[error]x", `\x23#[error]x`, `\x23#[error]x`},
		{":: inside a line is kept", "std::vector and a::b", "std::vector and a::b", "std::vector and a::b"},
		{"a Markdown heading is kept", "## Summary", "## Summary", "## Summary"},
		{"accented and wide text is kept", "café 日本語 ✓", "café 日本語 ✓", "café 日本語 ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
		})
	}
}

// FuzzText checks that nothing a terminal obeys survives, that the result
// is UTF-8, that Line has no line breaks, and that sanitising is
// idempotent.
func FuzzText(f *testing.F) {
	for _, s := range []string{"a\x1b[31mred", "\r\n::error::x", "\u202e\u009b", "\xff\xfe", " \t##[x]", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Text(s), Line(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("not UTF-8: %q", out)
			}
			for _, r := range out {
				if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || unsafeRune(r) {
					t.Fatalf("%q survives in %q", r, out)
				}
			}
			for _, l := range strings.Split(out, "\n") {
				if tl := strings.TrimLeft(l, " \t"); strings.HasPrefix(tl, "::") || strings.HasPrefix(tl, "##[") {
					t.Fatalf("a line starts a workflow command: %q", out)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line kept a line break or tab: %q", Line(s))
		}
		if Text(Text(s)) != Text(s) || Line(Line(s)) != Line(s) {
			t.Fatalf("not idempotent: %q", s)
		}
	})
}

func TestWriterKnowsWhereLinesStart(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	for _, s := range []string{"ok\n", "::error::x\n", "a ", "::kept\n", "\x1b[2J"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "ok\n\\x3a:error::x\na ::kept\n\\x1b[2J"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
