package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Static expansion: what bash will make of a word before the program sees
// it, as far as that can be known without running anything. Quotes and
// escapes are removed, $'…' is decoded, braces are expanded (bounded), and
// simple variables assigned earlier in the same command line are
// substituted. Everything else (command substitution, arithmetic, unknown
// variables) leaves the word dynamic.

// maxBraceFields bounds how many words one brace expansion may produce
// before the word is treated as dynamic: {1..100000000} must not make the
// analysis allocate without end.
const maxBraceFields = 256

// maxVarValue bounds the length of a variable value the analysis keeps, so
// that x=$x$x$x… repeated cannot grow without end.
const maxVarValue = 4096

// field is one word as the program will receive it, or one dynamic word.
type field struct {
	// value is the word after static expansion; meaningful when !dynamic.
	value string
	// source is the shell word as written.
	source string
	// dynamic reports that the word's value is only known at run time.
	dynamic bool
	// glob reports unquoted pattern characters (* ? [) in the value: the
	// shell may replace the word by file names.
	glob bool
	// mayHideOption reports a glob at the start of the word (after dashes)
	// that could expand to a file name that looks like an option.
	mayHideOption bool
	// expanded reports that braces or variables were expanded.
	expanded bool
	// empty is the value when every parameter expansion in the word that
	// may be unset or empty is empty ("$DIR/" gives "/"); hasEmpty says
	// whether such a value exists (it does not for ${X:?}).
	empty    string
	hasEmpty bool
	// home is the value when every expansion derived from the home
	// directory whose result the analysis cannot compute (${HOME%/*},
	// ${XDG_CONFIG_HOME}) is taken as the directory it usually names
	// ("~", "~/.config"); hasHome says the word has such an expansion.
	// Like empty it only feeds the danger checks: the word stays dynamic.
	home    string
	hasHome bool
	// quotedTilde reports a word that starts with a quoted "~".
	quotedTilde bool
}

// vars is what the analysis knows about shell variables: a value, or nil
// when the variable was given a value that is only known at run time.
type vars map[string]*string

// evalWord expands one shell word into the fields the program receives.
func (an *analyzer) evalWord(w *syntax.Word, src string) []field {
	source := ""
	if w != nil && len(w.Parts) > 0 {
		source = src[w.Pos().Offset():w.End().Offset()]
	}
	if w == nil || len(w.Parts) == 0 {
		return []field{{source: source}}
	}
	if len(w.Parts) == 1 {
		// The common case: one plain literal with nothing to expand.
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(l.Value, "\\*?[{") && !strings.HasPrefix(l.Value, "~") {
			return []field{{value: l.Value, source: source, empty: l.Value, hasEmpty: true}}
		}
	}
	words := []*syntax.Word{w}
	braced := false
	if hasBraceLit(w) {
		cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
		if syntax.SplitBraces(cp) {
			braced = true
			words = words[:0]
			for bw, err := range expand.BracesSeq(nil, cp) {
				if err != nil || len(words) >= maxBraceFields {
					return []field{{source: source, dynamic: true, glob: true, mayHideOption: true}}
				}
				words = append(words, bw)
			}
		}
	}
	var out []field
	for _, bw := range words {
		for _, f := range an.evalParts(bw.Parts) {
			f.source = source
			f.expanded = f.expanded || braced
			out = append(out, f)
		}
	}
	// A brace expansion needs no mayHideOption: its words are all known,
	// so -{delete,} is checked as -delete.
	return out
}

func hasBraceLit(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

// evalState builds the fields of one word, part by part.
type evalState struct {
	fields []field
	cur    field
	// started reports that cur holds something (an empty quoted string
	// still makes a field).
	started bool
}

// addLit adds literal text of the word. A "~" that starts the word but is
// quoted or escaped is not the home directory: the field gets "./" in
// front, which names the same file without the tilde's meaning.
func (s *evalState) addLit(v string, quoted bool) {
	if quoted && s.cur.value == "" && strings.HasPrefix(v, "~") {
		s.cur.quotedTilde = true
	}
	s.add(v, quoted)
}

func (s *evalState) add(v string, quoted bool) {
	if !quoted {
		// An unquoted [ may open a bracket pattern; a lone [ is the test
		// command, handled in split.
		i := strings.IndexAny(v, "*?[")
		if i >= 0 {
			if strings.Trim(s.cur.value+v[:i], "-") == "" {
				s.cur.mayHideOption = true
			}
			s.cur.glob = true
		}
	}
	s.cur.value += v
	s.cur.empty += v
	s.cur.home += v
	s.started = true
}

func (s *evalState) split() {
	if s.cur.value == "[" || s.cur.value == "[[" {
		s.cur.glob, s.cur.mayHideOption = false, false
	}
	if s.cur.quotedTilde {
		s.cur.value, s.cur.empty, s.cur.home = "./"+s.cur.value, "./"+s.cur.empty, "./"+s.cur.home
	}
	if s.started {
		s.fields = append(s.fields, s.cur)
	}
	s.cur = field{hasEmpty: true}
	s.started = false
}

// evalParts expands the parts of one brace-free word.
func (an *analyzer) evalParts(parts []syntax.WordPart) []field {
	s := &evalState{cur: field{hasEmpty: true}}
	for i, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			// A leading ~ is kept as "~": tilde expansion is left to the
			// caller, and the checks read "~" as the home directory. The
			// other tilde prefixes are expanded here (see tilde).
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				v, dynamic := an.tilde(p.Value)
				if dynamic {
					s.dynamicPart(false)
					s.cur.hasHome = true
					s.cur.home += "~" + v
					continue
				}
				s.addUnquotedLit(v)
				continue
			}
			s.addUnquotedLit(p.Value)
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				v = decodeANSIC(v)
			}
			s.addLit(v, true)
		case *syntax.DblQuoted:
			s.started = true
			for _, dp := range p.Parts {
				switch q := dp.(type) {
				case *syntax.Lit:
					s.addLit(unescapeDouble(q.Value), true)
				case *syntax.ParamExp:
					an.param(s, q, true)
				default:
					s.dynamicPart(true)
				}
			}
		case *syntax.ParamExp:
			an.param(s, p, false)
		default:
			s.dynamicPart(true)
		}
	}
	s.split()
	if len(s.fields) == 0 {
		// An unquoted expansion that is empty gives no word at all; the
		// analysis keeps one empty word so that callers see something.
		return []field{{hasEmpty: true}}
	}
	return s.fields
}

func (s *evalState) addUnquotedLit(v string) {
	// Backslashes quote the next character; quoted glob characters are
	// literal.
	if !strings.Contains(v, `\`) {
		s.addLit(v, false)
		return
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
			s.addLit(v[i:i+1], true)
			continue
		}
		s.addLit(v[i:i+1], false)
	}
}

// dynamicPart marks the field as known only at run time. mayBeEmpty says
// whether the part can expand to nothing.
func (s *evalState) dynamicPart(mayBeEmpty bool) {
	s.cur.dynamic = true
	s.started = true
	if !mayBeEmpty {
		s.cur.hasEmpty = false
	}
}

// param expands a parameter expansion: a variable or array whose value
// the analysis knows is substituted (also with a literal index or
// substring), anything else is dynamic.
func (an *analyzer) param(s *evalState, p *syntax.ParamExp, quoted bool) {
	if p.Param == nil {
		s.dynamicPart(true)
		return
	}
	name := p.Param.Value
	if an.homeParam(s, p, quoted) {
		return
	}
	if !p.Excl && !p.Length && !p.Width && p.Repl == nil && p.Names == 0 && p.Exp == nil {
		if vals, ok := an.paramValues(name, p, quoted); ok {
			s.cur.expanded = true
			for i, v := range vals {
				if quoted {
					if i > 0 {
						s.split() // "${a[@]}" gives one word per element
					}
					s.add(v, true)
					continue
				}
				if i > 0 {
					s.split()
				}
				an.splitAdd(s, v)
			}
			return
		}
		s.dynamicPart(true)
		return
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			// ${X:?} stops the shell when X is unset: never empty.
			s.dynamicPart(false)
			return
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			// When unset, the default is used; take it as the "empty"
			// value when it is a plain literal.
			s.cur.dynamic = true
			s.started = true
			if p.Exp.Word != nil {
				if d, ok := an.staticString(p.Exp.Word); ok {
					s.cur.empty += d
					s.cur.home += d
				}
			}
			return
		}
	}
	s.dynamicPart(true)
}

// homeDirs are the variables that name the home directory or a directory
// in it, with the directory each usually names.
var homeDirs = map[string]string{
	"HOME": "~", "ZDOTDIR": "~", "XDG_CONFIG_HOME": "~/.config", "XDG_DATA_HOME": "~/.local/share",
	"XDG_STATE_HOME": "~/.local/state", "XDG_CACHE_HOME": "~/.cache", "XDG_BIN_HOME": "~/.local/bin",
}

// homeParam expands a parameter expansion of a home variable that
// transforms it (${HOME%/}, ${HOME:?}, ${XDG_CONFIG_HOME:-…}), or a home
// variable other than HOME, and reports whether it did. A transformation
// that cannot change the value (removing trailing slashes, none of which a
// home directory has; ${HOME:?}, which stops the shell instead of giving
// another value) gives the value itself. Any other leaves the word
// dynamic, with the directory the variable usually names as its home
// value for the danger checks: rm -rf "${HOME%/*}" is still a home
// directory's deletion.
func (an *analyzer) homeParam(s *evalState, p *syntax.ParamExp, quoted bool) bool {
	name := p.Param.Value
	usual, ok := homeDirs[name]
	if !ok || p.Index != nil {
		return false
	}
	if _, assigned := an.vars[name]; assigned {
		return false // a value set in the command line is known or unknown as such
	}
	if name == "HOME" && p.Exp == nil && !p.Excl && !p.Length && !p.Width && p.Repl == nil && p.Names == 0 && p.Slice == nil {
		return false // plain $HOME: expanded as "~" by paramValues
	}
	if name == "HOME" && !p.Excl && !p.Length && !p.Width && p.Repl == nil && p.Names == 0 && p.Slice == nil && p.Exp != nil {
		keep := false
		switch p.Exp.Op {
		case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			keep = true
		case syntax.RemSmallSuffix, syntax.RemLargeSuffix:
			keep = p.Exp.Word == nil || strings.Trim(patternText(p.Exp.Word), "/") == ""
		case syntax.RemSmallPrefix, syntax.RemLargePrefix:
			keep = p.Exp.Word == nil || len(p.Exp.Word.Parts) == 0
		}
		if keep {
			s.cur.expanded = true
			s.cur.hasHome = true
			if quoted {
				s.add(usual, true)
			} else {
				an.splitAdd(s, usual)
			}
			return true
		}
	}
	s.dynamicPart(true)
	s.cur.hasHome = true
	s.cur.home += usual
	if p.Exp != nil && (p.Exp.Op == syntax.ErrorUnset || p.Exp.Op == syntax.ErrorUnsetOrNull) {
		s.cur.hasEmpty = false
	}
	if p.Exp != nil && p.Exp.Word != nil {
		switch p.Exp.Op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if d, ok := an.staticString(p.Exp.Word); ok {
				s.cur.empty += d
			}
		}
	}
	return true
}

// patternText is a pattern word's literal text, or "$" when a part of it
// is not a plain literal.
func patternText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			return "$"
		}
		b.WriteString(l.Value)
	}
	return b.String()
}

// paramValues returns the values of $x, ${x}, ${a[@]}, ${a[*]}, ${a[2]}
// and ${x:1:2} when they are known: one value, or one per element for
// ${a[@]} (and unquoted ${a[*]}).
func (an *analyzer) paramValues(name string, p *syntax.ParamExp, quoted bool) ([]string, bool) {
	var vals []string
	switch {
	case p.Index == nil:
		v, ok := an.lookup(name)
		if !ok {
			return nil, false
		}
		vals = []string{v}
	default:
		w, ok := p.Index.(*syntax.Word)
		if !ok {
			return nil, false
		}
		elems, isArray := an.arrays[name]
		if !isArray {
			v, ok := an.lookup(name)
			if !ok {
				return nil, false
			}
			elems = []string{v}
		}
		switch idx := w.Lit(); {
		case idx == "@" || (idx == "*" && !quoted):
			vals = elems
		case idx == "*":
			sep := ""
			if ifs := an.ifsValue(); ifs != "" {
				sep = ifs[:1]
			}
			vals = []string{strings.Join(elems, sep)}
		case isDigits(idx):
			n, err := strconv.Atoi(idx)
			if err != nil || n >= len(elems) {
				vals = []string{""}
			} else {
				vals = []string{elems[n]}
			}
		default:
			return nil, false
		}
	}
	if p.Slice != nil {
		off, ok1 := literalInt(p.Slice.Offset)
		length, ok2 := -1, true
		if p.Slice.Length != nil {
			length, ok2 = literalInt(p.Slice.Length)
		}
		if !ok1 || !ok2 || off < 0 || length < -1 || len(vals) != 1 {
			return nil, false
		}
		r := []rune(vals[0])
		off = min(off, len(r))
		end := len(r)
		if length >= 0 {
			end = min(off+length, len(r))
		}
		vals = []string{string(r[off:end])}
	}
	return vals, true
}

// literalInt reads a plain non-negative number in arithmetic.
func literalInt(x syntax.ArithmExpr) (int, bool) {
	w, ok := x.(*syntax.Word)
	if !ok || !isDigits(w.Lit()) {
		return 0, false
	}
	n, err := strconv.Atoi(w.Lit())
	return n, err == nil
}

// ifsValue is the field separator: bash's default, or a value assigned
// earlier in the command line.
func (an *analyzer) ifsValue() string {
	if an.ifs != nil {
		return *an.ifs
	}
	return " \t\n"
}

// splitAdd adds an unquoted expansion to the field under construction:
// it is split on IFS (an expansion of only separators just ends the
// field, so rm${IFS}-rf is two words) and then globbed.
func (an *analyzer) splitAdd(s *evalState, v string) {
	if v == "" {
		return
	}
	ifs := an.ifsValue()
	if ifs == "" {
		s.add(v, false)
		return
	}
	isSep := func(r rune) bool { return strings.ContainsRune(ifs, r) }
	fs := strings.FieldsFunc(v, isSep)
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if len(fs) == 0 {
		s.split()
		return
	}
	for j, f := range fs {
		if j > 0 || isSep(first) {
			s.split()
		}
		s.add(f, false)
	}
	if isSep(last) {
		s.split()
	}
}

// lookup returns the value of a variable the analysis knows statically.
func (an *analyzer) lookup(name string) (string, bool) {
	if an.ifsUnknown {
		return "", false
	}
	if v, ok := an.vars[name]; ok {
		if v == nil {
			return "", false
		}
		return *v, true
	}
	switch name {
	case "HOME":
		return "~", true
	case "IFS":
		return an.ifsValue(), true
	case "PWD":
		// The working directory: the workspace, or the target of a
		// static cd (rm -rf "$PWD" deletes the workspace).
		if an.cwdUnknown {
			return "", false
		}
		if an.cwd == "" {
			return ".", true
		}
		return an.cwd, true
	}
	return "", false
}

// setVar records an assignment: value nil means only known at run time.
func (an *analyzer) setVar(name string, value *string) {
	if an.vars == nil {
		an.vars = vars{}
	}
	if value != nil && len(*value) > maxVarValue {
		value = nil
	}
	an.vars[name] = value
	delete(an.arrays, name)
	if name == "IFS" {
		if value == nil {
			an.ifsUnknown = true
		} else {
			an.ifs = value
		}
	}
}

// setArray records an array assignment a=(x y z) whose elements are all
// static; any other array assignment makes the array unknown.
func (an *analyzer) setArray(name string, arr *syntax.ArrayExpr, src string) {
	var elems []string
	known := arr != nil
	if known {
		for _, e := range arr.Elems {
			if e.Index != nil || e.Value == nil {
				known = false
				break
			}
			for _, f := range an.evalWord(e.Value, src) {
				if f.dynamic || f.glob {
					known = false
				}
				elems = append(elems, f.value)
			}
		}
	}
	if !known || len(elems) > maxBraceFields {
		an.setVar(name, nil)
		return
	}
	first := ""
	if len(elems) > 0 {
		first = elems[0]
	}
	an.setVar(name, &first)
	if an.arrays == nil {
		an.arrays = map[string][]string{}
	}
	an.arrays[name] = elems
}

// staticString expands a word that must give exactly one static field, as
// the value of an assignment does (no splitting, no globbing).
func (an *analyzer) staticString(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeUnquoted(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(decodeANSIC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				switch q := dp.(type) {
				case *syntax.Lit:
					b.WriteString(unescapeDouble(q.Value))
				case *syntax.ParamExp:
					v, ok := an.simpleParam(q)
					if !ok {
						return "", false
					}
					b.WriteString(v)
				default:
					return "", false
				}
			}
		case *syntax.ParamExp:
			v, ok := an.simpleParam(p)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		default:
			return "", false
		}
		if b.Len() > maxVarValue {
			return "", false
		}
	}
	out := b.String()
	if strings.HasPrefix(out, "~") {
		if l, ok := w.Parts[0].(*syntax.Lit); !ok || !strings.HasPrefix(l.Value, "~") {
			out = "./" + out // a quoted ~ is not the home directory
		}
	}
	return out, true
}

func (an *analyzer) simpleParam(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	return an.lookup(p.Param.Value)
}

// unescapeUnquoted removes backslashes the way bash does outside quotes.
func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes backslashes the way bash does inside "…".
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeANSIC decodes the body of a $'…' string the way bash does. A NUL
// ends the string, as in bash.
func decodeANSIC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			} else {
				b.WriteString(`\c`)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(n))
			} else if utf8.ValidRune(rune(n)) {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	out := b.String()
	if k := strings.IndexByte(out, 0); k >= 0 {
		out = out[:k]
	}
	return out
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// tilde expands the tilde prefix that starts an unquoted word, as far as
// the analysis can: "~" stays "~" (the home directory, for the caller),
// unless HOME was assigned earlier in the command line, when it is that
// value, or only known at run time (HOME=/etc; echo x > ~/passwd writes
// /etc/passwd, not the home's passwd). "~+" is the working directory (the
// workspace, or the target of a static cd), "~-" the previous one, only
// known at run time, and "~name" the home of the user name: /root for
// root and /home/name for the others, which is outside the workspace as
// the real one is. dynamic reports a value only known at run time; v is
// then the rest of the word after the prefix.
func (an *analyzer) tilde(lit string) (v string, dynamic bool) {
	prefix, rest := lit, ""
	if i := strings.IndexByte(lit, '/'); i >= 0 {
		prefix, rest = lit[:i], lit[i:]
	}
	switch {
	case prefix == "~":
		h, assigned := an.vars["HOME"]
		if !assigned {
			return lit, false
		}
		if h == nil {
			return rest, true
		}
		return *h + rest, false
	case prefix == "~+":
		if an.cwdUnknown {
			return rest, true
		}
		if an.cwd == "" {
			return "." + rest, false
		}
		return an.cwd + rest, false
	case prefix == "~-":
		return rest, true
	case len(prefix) > 1 && isUserName(prefix[1:]):
		if prefix == "~root" {
			return "/root" + rest, false
		}
		return "/home/" + prefix[1:] + rest, false
	}
	return lit, false
}

// isUserName reports a login name a tilde prefix can name.
func isUserName(s string) bool {
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
			(i > 0 && (r == '-' || r == '.' || (r >= '0' && r <= '9')))
		if !ok {
			return false
		}
	}
	return s != ""
}
