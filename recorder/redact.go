package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// A Redactor replaces secrets in encoded trajectory lines and in any other
// text the recorder, the blob store or the live transcript write. It is
// immutable and safe for concurrent use. The zero Redactor (and a nil one) uses the
// built-in patterns, so there is no Redactor that lets secrets through.
//
// The built-in patterns work on the encoded JSON text and are written so
// that a replacement never crosses a JSON string boundary or splits an
// escape: the replaced part of a match is a run of token characters, which
// never include '"' or '\', or (for private keys) whole escape pairs inside
// one string. A line that was valid JSON therefore stays valid JSON. User
// patterns carry no such guarantee; when one breaks the line, the line is
// decoded and every string redacted one by one instead.
//
// Secrets are recognised on decoded values too (see redact_hidden.go): a
// key spelled with escapes (JSON's \/ and \u002d, \xXX, %XX, nested) is
// replaced in place, escapes included, and a base64 run that decodes to a
// key is replaced whole. Redaction is still a safety net for accidents,
// not a proof against an adversary who encrypts a key before printing it.
type Redactor struct {
	patterns []pattern
}

// pattern is one redaction rule. For the built-ins, group 1 of re (or
// group) is the secret; the rest of a match is context that is kept.
type pattern struct {
	name  string
	re    *regexp.Regexp
	group int
	// alt, when not 0, is the group that holds the secret when group
	// did not match.
	alt int
	// find is a cheap test that returns the offset from which re may
	// match, or -1 when it cannot match at all, so that the regexp runs on
	// few lines and, when it does, only near each candidate (see next).
	// It must never miss a match (the fuzz test checks). nil means the
	// regexp searches the whole text.
	find func(line []byte) int
	// valid, when set, is a last test of a match whose secret is
	// src[s:e]: the patterns for names and headers use it to tell a
	// random-looking value from a word.
	valid func(src []byte, s, e int) bool
	repl  string
}

// boundary is what may stand before a token secret: the start, a character
// that is not a letter or digit, or a JSON escape that ends in one (\n, \t,
// \u00e9), so that "task-..." does not look like "sk-..." but "\nsk-..." does.
const boundary = `(?:^|[^A-Za-z0-9]|\\[bfnrt]|\\u[0-9A-Fa-f]{4})`

// jsonStringChars matches the characters of an encoded JSON string: anything
// but a quote or backslash, or a whole escape pair.
const jsonStringChars = `(?:[^"\\]|\\.)`

// boundaryLen is the longest text boundary can match: \u00e9.
const boundaryLen = 6

var builtins = []pattern{
	// First, because a key block is the widest match: the patterns below
	// would otherwise take a piece of it (PRIVATE_KEY=-----BEGIN) and leave
	// the rest. A block is redacted through its END line, or to the end of
	// its JSON string when it was cut off (a truncated tool output).
	builtin("private_key", `(-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?:`+
		jsonStringChars+`*?-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|`+jsonStringChars+`*))`,
		findPrivateKey),

	builtin("anthropic", boundary+`(sk-ant-[A-Za-z0-9_-]{20,})`,
		func(b []byte) int { return findToken(b, "sk-ant-", 1, isKeyChar, 20) }),

	// After anthropic, whose keys also start with sk-. The optional proj-,
	// svcacct- or admin- is made of key characters too, so 20 key
	// characters after sk- is a necessary condition.
	builtin("openai", boundary+`(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})`,
		func(b []byte) int { return findToken(b, "sk-", 1, isKeyChar, 20) }),

	builtin("aws_access_key", boundary+`((?:AKIA|ASIA)[0-9A-Z]{16}[0-9A-Za-z]*)`,
		func(b []byte) int {
			return first(findToken(b, "AKIA", 1, isUpperDigit, 16), findToken(b, "ASIA", 1, isUpperDigit, 16))
		}),

	// The key name and separator are kept. The three forms are plain text
	// (key=value, key: value, key='value', key=\"value\"), an embedded JSON
	// member ("key":"value") and escaped JSON inside a string
	// (\"key\":\"value\"); each requires the value to start inside a string.
	// The names are those of the credentials file and environment
	// (aws_secret_access_key, AWS_SECRET_KEY) and of the JSON the AWS CLI
	// prints (SecretAccessKey).
	builtin("aws_secret", `(?:`+ci("aws_secret_access_key")+`|`+ci("secretaccesskey")+`|`+ci("aws_secret_key")+`)(?:"\s*:\s*"|\\"\s*[:=]\s*\\"|\s*[:=]\s*(?:\\"|')?)([A-Za-z0-9/+]{40,}=*)`,
		func(b []byte) int {
			return findNames(b, 'k', []string{"aws_secret_access_key", "secretaccesskey", "aws_secret_key"}, awsSecretFollows)
		}),

	builtin("github", boundary+`(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`,
		func(b []byte) int {
			at := findToken(b, "github_pat_", 5, isWordChar, 22)
			if !bytes.Contains(b, []byte("gh")) { // "github" has no "gh"
				return at
			}
			for _, lit := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
				at = first(at, findToken(b, lit, 2, isAlnum, 36))
			}
			return at
		}),

	// The word Bearer is kept so a reader still sees what was there.
	// Whitespace may be encoded (\n, \t) inside a JSON string.
	builtin("bearer", ci("bearer")+`(?:\s|\\[nrt])+([A-Za-z0-9._~+/=-]{16,})`, findBearer),

	builtin("gitlab", boundary+`(glpat-[A-Za-z0-9_-]{20,})`,
		func(b []byte) int { return findToken(b, "glpat-", 2, isKeyChar, 20) }),

	builtin("slack", boundary+`(xox[abprs]-[A-Za-z0-9-]{10,})`, findSlack),

	builtin("stripe", boundary+`((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})`,
		findStripe),

	builtin("google_api_key", boundary+`(AIza[0-9A-Za-z_-]{35,})`,
		func(b []byte) int { return findToken(b, "AIza", 1, isKeyChar, 35) }),

	builtin("npm", boundary+`(npm_[A-Za-z0-9]{36,})`,
		func(b []byte) int { return findToken(b, "npm_", 1, isAlnum, 36) }),

	builtin("huggingface", boundary+`(hf_[A-Za-z0-9]{34,})`,
		func(b []byte) int { return findToken(b, "hf_", 2, isAlnum, 34) }),

	// A JSON Web Token: a header and a payload that are base64url JSON
	// objects (so they start with eyJ, which is {"), and a signature,
	// empty for unsigned tokens.
	builtin("jwt", boundary+`(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)`, findJWT),

	// The password of scheme://user:password@host; the scheme, the user
	// and the host are kept. The password cannot hold a quote or a
	// backslash, so a replacement stays inside its JSON string.
	builtin("url_password", `://[^\s:/@"\\]*:([^\s/@"\\]+)@`, findURLPassword),

	// Credential headers other than a bearer token (which has its own
	// pattern, before this one): Authorization: Basic ..., x-api-key: ...,
	// as plain text, an embedded JSON member or escaped JSON in a string.
	// The value must look random (see looksSecret), so that prose such as
	// "Authorization: required" is left alone.
	withValid(builtin("auth_header", `(?:`+ci("authorization")+`|`+ci("api-key")+`|`+ci("auth-token")+`|`+ci("access-token")+`|`+ci("private-token")+`)(?:"\s*:\s*"|\\"\s*:\s*\\"|\s*:\s*)(?:(?:`+ci("basic")+`|`+ci("bearer")+`|`+ci("token")+`|`+ci("digest")+`)\s+)?([A-Za-z0-9._~+/=-]{8,})`, findAuthHeader), looksSecret),

	// An env-file style assignment to a name that says it holds a secret:
	// DB_PASSWORD=..., export GITHUB_TOKEN='...', --api-key=... in a URL
	// query or a command line. There is no space around the =, which is
	// what tells configuration from code (token = compute()); the value
	// must look like a secret (see looksSecret) and cannot be a $variable
	// or a <placeholder>.
	withGroup(withValid(builtin("secret_assignment", `([A-Za-z0-9_-]*(?:`+ci("password")+`|`+ci("passwd")+`|`+ci("passphrase")+`|`+ci("credential")+`|`+ci("secret")+`|`+ci("token")+`|`+ci("api")+`[_-]?`+ci("key")+`|`+ci("access")+`_?`+ci("key")+`|`+ci("private")+`_?`+ci("key")+`)[A-Za-z0-9_-]*)=(?:'|\\")?([^\s'"\\$<>{}()\[\];&|,=`+"`"+`][^\s'"\\$<>{}()\[\];&|,`+"`"+`]{3,})`, findAssignment), looksSecret), 2),

	// A member of a JSON object whose name says it holds a secret
	// ("db_password": "...", \"client_secret\": \"...\" in JSON
	// escaped inside a string), the value redacted to its closing quote:
	// whole escape pairs, never \", so the match stays in its string
	// (group 1); or the same in YAML and other name: value text
	// (password: ..., API_TOKEN: ...), to the end of the word (group 2).
	withAlt(withValid(builtin("secret_field", `(?:`+secretFieldNames+`)(?:(?:"\s*:\s*"|\\"\s*:\s*\\")((?:[^"\\]|\\[^"]){4,})|[ \t]*:[ \t]+(?:'|\\")?([^\s'"\\$<>{}()\[\];&|,`+"`"+`][^\s'"\\$<>{}()\[\];&|,`+"`"+`]{3,}))`,
		findField), looksSecretValue), 2),
}

// builtin makes a built-in pattern whose group 1 is the secret.
func builtin(name, re string, find func([]byte) int) pattern {
	return pattern{name: name, re: regexp.MustCompile(re), group: 1, find: find, repl: "[REDACTED:" + name + "]"}
}

// ci returns a regexp that matches the ASCII word w in any letter case.
// It stands for (?i), which also folds the Kelvin sign into k and the long
// s into s, matches the find functions could not foresee.
func ci(w string) string {
	var b strings.Builder
	for _, c := range w {
		if c >= 'a' && c <= 'z' {
			b.WriteString("[" + string(c-'a'+'A') + string(c) + "]")
		} else {
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// withValid returns p with a last test of each match's secret.
func withValid(p pattern, valid func(secret []byte) bool) pattern {
	p.valid = func(src []byte, s, e int) bool { return valid(src[s:e]) }
	return p
}

// withAlt returns p with a second capture group that is the secret when
// the first one did not match: the pattern's alternatives each capture
// their own.
func withAlt(p pattern, group int) pattern {
	p.alt = group
	return p
}

// withGroup returns p with another capture group as the secret.
func withGroup(p pattern, group int) pattern {
	p.group = group
	return p
}

// userRepl replaces matches of user patterns.
const userRepl = "[REDACTED:custom]"

var defaultRedactor = &Redactor{patterns: builtins}

// DefaultRedactor returns the redactor with only the built-in patterns:
// private key blocks; Anthropic, OpenAI, Google and Hugging Face API keys;
// AWS access key ids and secret keys; GitHub, GitLab, Slack, Stripe and npm
// tokens; JSON Web Tokens; bearer tokens and other credential headers
// (Authorization, x-api-key); passwords in URLs (scheme://user:pass@host);
// and env-file assignments to secret names (DB_PASSWORD=...).
func DefaultRedactor() *Redactor { return defaultRedactor }

// NewRedactor returns a redactor with the built-in patterns and the extra
// ones, regular expressions in RE2 syntax applied after the built-ins. A
// match of an extra pattern is replaced by [REDACTED:custom]. A pattern that
// does not compile, or that matches the empty string (it would redact
// between every two characters), is an error naming its index.
func NewRedactor(extra []string) (*Redactor, error) {
	r := &Redactor{patterns: append([]pattern(nil), builtins...)}
	for i, src := range extra {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %d (%q): %w", i, src, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redaction pattern %d (%q): %w", i, src, errEmptyMatch)
		}
		p := pattern{name: "custom", re: re, repl: userRepl}
		if prefix, _ := re.LiteralPrefix(); prefix != "" {
			// Every match starts with the prefix.
			lit := []byte(prefix)
			p.find = func(b []byte) int { return bytes.Index(b, lit) }
		}
		r.patterns = append(r.patterns, p)
	}
	return r, nil
}

var errEmptyMatch = errors.New("matches the empty string; it would redact between every two characters")

// Redact replaces the secrets in line, one encoded JSON trajectory line
// without its newline or any other text (a tool output, a file, a line of
// the live transcript), and returns the result and the number of
// replacements. When nothing matches, out is line itself; otherwise out is
// a new slice and line is unchanged. When line is valid JSON, so is out.
// Redaction is idempotent: redacting out again finds nothing.
func (r *Redactor) Redact(line []byte) (out []byte, n int) {
	out, n, _ = r.redact(line)
	return out, n
}

// RedactString is Redact for a string.
func (r *Redactor) RedactString(s string) (string, int) {
	out, n := r.Redact([]byte(s))
	if n == 0 {
		return s, 0
	}
	return string(out), n
}

// Detect returns the name of the first built-in or user pattern ("custom")
// that finds a secret in b, or "" when there is none. It is what Redact
// would replace, without making the copy.
func (r *Redactor) Detect(b []byte) string {
	if name := r.detectRaw(b); name != "" {
		return name
	}
	if hidesEscapes(b) || hasBase64Text(b) {
		if _, n := redactText(r.list(), b, true); n > 0 {
			view, from := decodedView(b)
			if from != nil {
				if name := r.detectRaw(view); name != "" {
					return name
				}
			}
			return "base64"
		}
	}
	return ""
}

// detectRaw is Detect on the text as it stands.
func (r *Redactor) detectRaw(b []byte) string {
	for i := range r.list() {
		p := &r.list()[i]
		from := 0
		if p.find != nil {
			if from = p.find(b); from < 0 {
				continue
			}
		}
		if _, n := p.replace(b, from); n > 0 {
			return p.name
		}
	}
	return ""
}

// list returns the patterns, the built-ins for the zero and nil Redactor.
func (r *Redactor) list() []pattern {
	if r != nil && r.patterns != nil {
		return r.patterns
	}
	return builtins
}

// redact is Redact that also reports whether the slow path (decode, redact
// each string, re-encode) was taken, so tests can check that the built-in
// patterns never need it.
func (r *Redactor) redact(line []byte) (out []byte, n int, slow bool) {
	patterns := r.list()
	out, n = redactText(patterns, line, true)
	// Only a replacement can break the JSON, and replacements are rare, so
	// checking then costs nothing on the common path.
	if n == 0 || json.Valid(out) {
		return out, n, false
	}
	if fixed, m, err := redactStrings(line, patterns); err == nil {
		return fixed, m, true
	}
	// The line was not JSON to begin with; the secrets are gone at least.
	return out, n, false
}

// maxPasses bounds the passes of redactAll. Each pass after the first
// only replaces what an earlier replacement exposed, which takes a
// contrived input to happen at all.
const maxPasses = 8

// redactAll applies every pattern to b, the find functions first when
// filter is set, and repeats while a pass replaces something: a
// replacement can expose a secret that was glued to the one before it
// (AKIA...AKIA... is one long word until the first key becomes
// [REDACTED:aws_access_key]), and redaction must be idempotent.
func redactAll(patterns []pattern, b []byte, filter bool) (out []byte, n int) {
	out = b
	for pass := 0; pass < maxPasses; pass++ {
		k := 0
		for i := range patterns {
			p := &patterns[i]
			from := 0
			if p.find != nil && filter {
				if from = p.find(out); from < 0 {
					continue
				}
			}
			var m int
			out, m = p.replace(out, from)
			k += m
		}
		n += k
		if k == 0 {
			break
		}
	}
	return out, n
}

// window is the first span a built-in pattern's regexp runs over from a
// candidate its find function reported. Run over a whole megabyte, a
// regexp without a literal prefix costs a hundred milliseconds or more;
// over a small span it is fast, and a match is rarely longer.
const window = 1 << 10

// replace replaces every match of the pattern's group in src that starts
// at or after from. It returns src itself when there is none.
func (p *pattern) replace(src []byte, from int) ([]byte, int) {
	return replaceSpans(src, p.secrets(src, from), p.repl)
}

// secrets returns the spans of src that replace would replace: the
// pattern's group of every match that starts at or after from, but for
// those already replaced and those its valid test refuses. With a find
// function, from is its first candidate, and the regexp runs only near
// each candidate (see next).
func (p *pattern) secrets(src []byte, from int) [][2]int {
	var locs [][]int
	if p.find == nil {
		locs = p.re.FindAllSubmatchIndex(src[from:], -1)
		for _, loc := range locs {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += from
				}
			}
		}
	} else {
		for pos, c := from, from; c >= 0; {
			loc := p.next(src, c)
			if loc == nil {
				break
			}
			locs = append(locs, loc)
			if pos = loc[1]; loc[1] == loc[0] {
				pos++
			}
			if pos > len(src) {
				break
			}
			if c = p.find(src[pos:]); c >= 0 {
				c += pos
			}
		}
	}
	var spans [][2]int
	for _, loc := range locs {
		s, e := loc[2*p.group], loc[2*p.group+1]
		if s < 0 && p.alt > 0 {
			s, e = loc[2*p.alt], loc[2*p.alt+1]
		}
		if s < 0 || s == e {
			continue
		}
		// A secret already replaced is left as it is, so redaction is
		// idempotent and a redacted text counts no new redactions.
		if string(src[s:e]) == p.repl || (p.valid != nil && !p.valid(src, s, e)) {
			continue
		}
		spans = append(spans, [2]int{s, e})
	}
	return spans
}

// next returns the first match at or after the candidate c, with indexes
// into src, or nil when there is none. It runs the regexp over a window
// from c that doubles while the match found reaches the window's end (it
// may go on) or none is found (one may start inside and end outside),
// until the window holds the rest of src: the result is the one a search
// of the whole rest would give.
func (p *pattern) next(src []byte, c int) []int {
	for w := window; ; w *= 2 {
		end := min(len(src), c+w)
		loc := p.re.FindSubmatchIndex(src[c:end])
		if end == len(src) || (loc != nil && loc[1] < end-c) {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += c
				}
			}
			return loc
		}
	}
}

// redactStrings is the slow path: it walks the tokens of line, applies
// every pattern to each decoded string (keys too) and writes the value back
// with the original member order and numbers, so the line keeps its shape.
func redactStrings(line []byte, patterns []pattern) ([]byte, int, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(line))
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)

	type frame struct {
		object bool
		n      int // keys and values written so far
	}
	var stack []frame
	n := 0
	separate := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		switch {
		case f.object && f.n%2 == 1:
			out.WriteByte(':')
		case f.n > 0:
			out.WriteByte(',')
		}
		f.n++
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				separate()
				stack = append(stack, frame{object: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			out.WriteByte(byte(v))
		case string:
			separate()
			s, k := redactText(patterns, []byte(v), false)
			n += k
			if err := enc.Encode(string(s)); err != nil {
				return nil, 0, err
			}
			out.Truncate(out.Len() - 1) // Encode's newline
		case json.Number:
			separate()
			out.WriteString(v.String())
		case bool:
			separate()
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			separate()
			out.WriteString("null")
		}
	}
	if !json.Valid(out.Bytes()) {
		return nil, 0, errors.New("redact: re-encoded line is not valid JSON")
	}
	return out.Bytes(), n, nil
}

// The find functions below are necessary conditions for a match, written
// out by hand because a regexp without a literal prefix tries every
// position of the line, which is too slow to do for every event.

// findToken returns the offset from which a token starting with lit and
// followed by at least n bytes of class may be matched, allowing for the
// boundary before it, or -1 when there is no such token. lit is searched
// for by its byte at anchor, the rarest one in ordinary text.
func findToken(b []byte, lit string, anchor int, class func(byte) bool, n int) int {
	for i := 0; ; {
		j := indexAt(b[i:], lit, anchor)
		if j < 0 {
			return -1
		}
		i += j + len(lit)
		if hasRun(b[i:], class, n) && atBoundary(b, i-len(lit)) {
			return back(i-len(lit), boundaryLen)
		}
	}
}

// atBoundary reports whether the boundary pattern can match right before
// b[i]: at the start, after a byte that is not a letter or digit, or
// after a JSON escape that ends in one (\n, \u00e9).
func atBoundary(b []byte, i int) bool {
	switch {
	case i == 0 || !isAlnum(b[i-1]):
		return true
	case i >= 2 && b[i-2] == '\\' && bytes.IndexByte([]byte("bfnrt"), b[i-1]) >= 0:
		return true
	case i >= 6 && b[i-6] == '\\' && b[i-5] == 'u' && isHex(b[i-4]) && isHex(b[i-3]) && isHex(b[i-2]) && isHex(b[i-1]):
		return true
	}
	return false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// indexAt is bytes.Index that scans for the byte at lit[anchor] rather than
// lit[0]: a rare byte ("k" of "sk-") means few false starts.
func indexAt(s []byte, lit string, anchor int) int {
	c := lit[anchor]
	for i := anchor; i+len(lit)-anchor <= len(s); i++ {
		j := bytes.IndexByte(s[i:len(s)-len(lit)+anchor+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if string(s[i-anchor:i-anchor+len(lit)]) == lit {
			return i - anchor
		}
	}
	return -1
}

// findBearer returns the offset of the first "bearer", in any case,
// followed by whitespace (raw or a JSON escape) and 16 token characters.
// Each case of the first letter is scanned for once, so the work stays
// linear however many times the word occurs.
func findBearer(b []byte) int {
	return first(findBearerBy(b, 'b'), findBearerBy(b, 'B'))
}

func findBearerBy(b []byte, c byte) int {
	for i := 0; ; {
		j := indexFoldBy(b[i:], c, "bearer", 0)
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + len("bearer")
		k := i
		for k < len(b) {
			if c := b[k]; c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				k++
			} else if c == '\\' && k+1 < len(b) && (b[k+1] == 'n' || b[k+1] == 'r' || b[k+1] == 't') {
				k += 2
			} else {
				break
			}
		}
		if k > i && hasRun(b[k:], isBearerChar, 16) {
			return at
		}
	}
}

// hasRun reports whether b starts with at least n bytes of class.
func hasRun(b []byte, class func(byte) bool, n int) bool {
	if len(b) < n {
		return false
	}
	for _, c := range b[:n] {
		if !class(c) {
			return false
		}
	}
	return true
}

func back(i, n int) int {
	if i < 0 {
		return -1
	}
	return max(i-n, 0)
}

// first returns the smaller offset that is not -1.
func first(i, j int) int {
	if i < 0 || (j >= 0 && j < i) {
		return j
	}
	return i
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
func isUpperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func isWordChar(c byte) bool   { return isAlnum(c) || c == '_' }
func isKeyChar(c byte) bool    { return isAlnum(c) || c == '_' || c == '-' }
func isBearerChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-'
}

// indexFold returns the index of the first instance of needle, a
// lower-case ASCII string, in s in any letter case, or -1. It scans for the
// needle's byte at anchor with bytes.IndexByte (fast), in both cases, and
// compares in place.
func indexFold(s []byte, needle string, anchor int) int {
	c := needle[anchor]
	i := indexFoldBy(s, c, needle, anchor)
	if c >= 'a' && c <= 'z' {
		i = first(i, indexFoldBy(s, c-'a'+'A', needle, anchor))
	}
	return i
}

func indexFoldBy(s []byte, c byte, needle string, anchor int) int {
	for i := anchor; i+len(needle)-anchor <= len(s); i++ {
		j := bytes.IndexByte(s[i:len(s)-len(needle)+anchor+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if bytes.EqualFold(s[i-anchor:i-anchor+len(needle)], []byte(needle)) {
			return i - anchor
		}
	}
	return -1
}

// findPrivateKey returns the offset of the first "-----BEGIN" followed by
// upper-case words, digits and spaces up to "PRIVATE KEY", or -1.
func findPrivateKey(b []byte) int {
	for i := 0; ; {
		j := indexAt(b[i:], "-----BEGIN", 5)
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + len("-----BEGIN")
		k := i
		for k < len(b) && (b[k] >= 'A' && b[k] <= 'Z' || b[k] >= '0' && b[k] <= '9' || b[k] == ' ') {
			if bytes.HasPrefix(b[k:], []byte("PRIVATE KEY")) {
				return at
			}
			k++
		}
	}
}

// findSlack returns the offset from which a Slack token (xoxb-, xoxp-...)
// may be matched, or -1.
func findSlack(b []byte) int {
	for i := 0; ; {
		j := indexAt(b[i:], "xox", 0)
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + 3
		if at+5 <= len(b) && bytes.IndexByte([]byte("abprs"), b[at+3]) >= 0 && b[at+4] == '-' && hasRun(b[at+5:], isAlnumDash, 10) && atBoundary(b, at) {
			return back(at, boundaryLen)
		}
	}
}

// findStripe returns the offset from which a Stripe key (sk_live_,
// rk_test_...) may be matched, or -1.
func findStripe(b []byte) int {
	at := -1
	for _, lit := range []string{"k_live_", "k_test_"} {
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(lit))
			if j < 0 {
				break
			}
			k := i + j
			i = k + 1
			if k >= 1 && (b[k-1] == 's' || b[k-1] == 'r') && hasRun(b[k+len(lit):], isAlnum, 16) && atBoundary(b, k-1) {
				at = first(at, back(k-1, boundaryLen))
				break
			}
		}
	}
	return at
}

// findJWT returns the offset from which a JSON Web Token may be matched:
// eyJ, 8 base64url characters, then ".eyJ" and 8 more.
func findJWT(b []byte) int {
	for i := 0; ; {
		j := indexAt(b[i:], "eyJ", 2)
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + 3
		k := i
		for k < len(b) && isB64URL(b[k]) {
			k++
		}
		if k-i >= 8 && k+4 <= len(b) && string(b[k:k+4]) == ".eyJ" && hasRun(b[k+4:], isB64URL, 8) && atBoundary(b, at) {
			return back(at, boundaryLen)
		}
	}
}

// findURLPassword returns the offset of the first "://" followed by
// user:password@, the same test as the url_password pattern.
func findURLPassword(b []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("://"))
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + 3
		k := i
		for k < len(b) && !isURLStop(b[k]) && b[k] != ':' {
			k++
		}
		if k >= len(b) || b[k] != ':' {
			continue
		}
		k++
		pw := k
		for k < len(b) && !isURLStop(b[k]) {
			k++
		}
		if k > pw && k < len(b) && b[k] == '@' {
			return at
		}
	}
}

// isURLStop reports the bytes that end the user and password of a URL:
// whitespace, '/', '@' and the JSON string delimiters.
func isURLStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '/', '@', '"', '\\':
		return true
	}
	return false
}

// findAuthHeader returns the offset of the first credential header name
// followed by what the auth_header pattern requires (headerValueFollows).
func findAuthHeader(b []byte) int {
	return first(findNames(b, 'z', []string{"authorization"}, headerValueFollows),
		findNames(b, 'k', []string{"api-key", "auth-token", "access-token", "private-token"}, headerValueFollows))
}

// findNames returns the offset of the first of names, lower-case ASCII
// words that each hold the letter anchor once, found in any letter case
// and followed by what follows accepts, or -1. Each case of anchor is
// scanned for once for all the names, so the work stays linear however
// often the letter occurs.
func findNames(b []byte, anchor byte, names []string, follows func([]byte) bool) int {
	longest := 0
	for _, n := range names {
		longest = max(longest, len(n))
	}
	at := -1
	for _, c := range []byte{anchor, anchor - 'a' + 'A'} {
		for i := 0; i < len(b); {
			j := bytes.IndexByte(b[i:], c)
			if j < 0 {
				break
			}
			k := i + j
			i = k + 1
			for _, n := range names {
				s := k - strings.IndexByte(n, anchor)
				if s >= 0 && s+len(n) <= len(b) && bytes.EqualFold(b[s:s+len(n)], []byte(n)) && follows(b[s+len(n):]) {
					at = first(at, s)
				}
			}
			if at >= 0 && i > at+longest {
				break // a later name cannot start earlier
			}
		}
	}
	return at
}

// headerValueFollows reports whether b, what follows a header name,
// starts as auth_header's pattern requires: a separator (": ", "\":\"" in
// embedded JSON, \"...\" in escaped JSON), an optional scheme word and
// eight value characters.
func headerValueFollows(b []byte) bool {
	k, ok := valueStart(b, false)
	if !ok {
		return false
	}
	if hasRun(b[k:], isBearerChar, 8) {
		return true
	}
	for _, scheme := range []string{"basic", "bearer", "token", "digest"} {
		if len(b)-k > len(scheme) && bytes.EqualFold(b[k:k+len(scheme)], []byte(scheme)) {
			v := skipSpace(b, k+len(scheme))
			return v > k+len(scheme) && hasRun(b[v:], isBearerChar, 8)
		}
	}
	return false
}

// awsSecretFollows reports whether b, what follows an AWS secret key's
// name, starts as aws_secret's pattern requires: a separator and 40 key
// characters.
func awsSecretFollows(b []byte) bool {
	k, ok := valueStart(b, true)
	return ok && hasRun(b[k:], isAWSSecretChar, 40)
}

// valueStart finds where the value starts in b, what follows a key's name,
// and whether a separator comes first, in the three spellings a key meets
// in recorded text: "name": "value" in embedded JSON, \"name\": \"value\"
// in JSON escaped inside a string, and name: value. With assign, '=' also
// separates outside embedded JSON (name=value in env and ini files), and a
// bare value may open with ' or \".
func valueStart(b []byte, assign bool) (int, bool) {
	sep := func(k int) bool { return k < len(b) && (b[k] == ':' || assign && b[k] == '=') }
	k, ok := 0, false
	switch {
	case len(b) > 0 && b[0] == '"':
		k = skipSpace(b, 1)
		if ok = k < len(b) && b[k] == ':'; ok {
			k = skipSpace(b, k+1)
			ok = k < len(b) && b[k] == '"'
			k++
		}
	case len(b) > 1 && b[0] == '\\' && b[1] == '"':
		k = skipSpace(b, 2)
		if ok = sep(k); ok {
			k = skipSpace(b, k+1)
			ok = k+1 < len(b) && b[k] == '\\' && b[k+1] == '"'
			k += 2
		}
	default:
		k = skipSpace(b, 0)
		if ok = sep(k); ok {
			k = skipSpace(b, k+1)
			switch {
			case !assign:
			case k+1 < len(b) && b[k] == '\\' && b[k+1] == '"':
				k += 2
			case k < len(b) && b[k] == '\'':
				k++
			}
		}
	}
	return k, ok && k <= len(b)
}

func isAWSSecretChar(c byte) bool { return isAlnum(c) || c == '/' || c == '+' }

// skipSpace returns the index of the first byte at or after i that is not
// whitespace (the \s of a regexp).
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// secretNames are the words that make a name a secret one in
// secret_assignment, lower case; each is searched for in the name before
// an '='.
var secretNames = []string{"password", "passwd", "passphrase", "credential", "secret", "token", "apikey", "api_key", "api-key", "access_key", "accesskey", "private_key", "privatekey"}

// findAssignment returns the offset of the first name=value whose name
// holds a secret word and whose value has four characters: a necessary
// condition of the secret_assignment pattern. It looks at each '=' with a
// name character right before it, which code (x = y) rarely has.
func findAssignment(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '=')
		if j < 0 {
			return -1
		}
		eq := i + j
		i = eq + 1
		start := eq
		for start > 0 && isNameChar(b[start-1]) {
			start--
		}
		if start == eq || !assignedValue(b[eq+1:]) {
			continue
		}
		name := b[start:eq]
		for _, w := range secretNames {
			if indexFold(name, w, 0) >= 0 {
				return start
			}
		}
	}
}

// assignedValue reports whether b, what follows an '=', starts with an
// optional quote (' or \") and four value characters of secret_assignment,
// the first of which is not '=' (password==x is a comparison).
func assignedValue(b []byte) bool {
	if len(b) > 0 && b[0] == '\'' {
		b = b[1:]
	} else if len(b) > 1 && b[0] == '\\' && b[1] == '"' {
		b = b[2:]
	}
	return len(b) > 0 && b[0] != '=' && hasRun(b, isValueChar, 4)
}

func isNameChar(c byte) bool { return isWordChar(c) || c == '-' }

// isValueChar is the class of secret_assignment's value.
func isValueChar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\'', '"', '\\', '$', '<', '>', '{', '}', '(', ')', '[', ']', ';', '&', '|', ',', '`':
		return false
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isAlnumDash(c byte) bool { return isAlnum(c) || c == '-' }
func isB64URL(c byte) bool    { return isAlnum(c) || c == '-' || c == '_' }

// looksSecret tells a credential from a word or a number in the patterns
// that key on a name (secret_assignment, auth_header): a secret has a
// digit or a symbol, or is long and of mixed case; it is not only digits
// (MAX_TOKENS=4096), a dotted or slashed path without digits
// (password=req.body.password, SECRETS_DIR=/run/secrets) or a plain word
// (Authorization: required).
func looksSecret(v []byte) bool {
	var digits, upper, lower, symbols int
	for i, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'A' && c <= 'Z':
			if i > 0 {
				upper++
			}
		case c >= 'a' && c <= 'z':
			lower++
		case c == '.' || c == '/' || c == '_' || c == '-':
		default:
			symbols++
		}
	}
	switch {
	case digits == len(v):
		return false
	case digits > 0 || symbols > 0:
		return true
	}
	return len(v) >= 12 && upper > 0 && lower > 0
}

// secretFieldWords are the endings of a name that says its value is a
// secret in the secret_member and secret_field patterns, lower case: a
// name is taken by its ending (db_password, client_secret, API_TOKEN,
// GCP_CREDENTIAL), so that max_tokens or token_type are not.
var secretFieldWords = []string{
	"password", "passwd", "passphrase", "pwd", "secret", "token", "credential", "credentials",
	"apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
	"privatekey", "private_key", "private-key", "secretkey", "secret_key", "secret-key",
}

// secretFieldNames is secretFieldWords as a regexp, in any letter case.
var secretFieldNames = func() string {
	var alts []string
	for _, w := range secretFieldWords {
		alts = append(alts, ci(w))
	}
	return strings.Join(alts, "|")
}()

// secretFieldByLast groups secretFieldWords by their last letter, so that
// a name is compared only with the words it may end with.
var secretFieldByLast = func() (m [256][]string) {
	for _, w := range secretFieldWords {
		c := w[len(w)-1]
		m[c] = append(m[c], w)
		if c >= 'a' && c <= 'z' {
			m[c-'a'+'A'] = append(m[c-'a'+'A'], w)
		}
	}
	return m
}()

// secretFieldName returns the start of the earliest of secretFieldWords
// that ends b[:e], in any letter case, or -1.
func secretFieldName(b []byte, e int) int {
	if e == 0 {
		return -1
	}
	at := -1
	for _, w := range secretFieldByLast[b[e-1]] {
		if endsFold(b[:e], w) {
			at = first(at, e-len(w))
		}
	}
	return at
}

// endsFold reports whether b ends with w, a lower-case ASCII word, in any
// letter case. It compares from the end, where names differ soonest.
func endsFold(b []byte, w string) bool {
	if len(b) < len(w) {
		return false
	}
	b = b[len(b)-len(w):]
	for i := len(w) - 1; i >= 0; i-- {
		if c := b[i]; c != w[i] && (c < 'A' || c > 'Z' || c+'a'-'A' != w[i]) {
			return false
		}
	}
	return true
}

// findField returns the offset of the first name that ends in one of
// secretFieldWords and is followed by what one of secret_field's
// alternatives requires, or -1. It looks at each ':' and tests exactly what
// the pattern's regexp would, so that the regexp runs only where it
// matches: a false candidate would send it over the rest of the text.
func findField(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], ':')
		if j < 0 {
			return -1
		}
		k := i + j
		i = k + 1
		// What follows the colon tells the forms apart cheaply: most
		// colons in a trajectory line open a number, an object or an
		// array, which neither form has.
		if k+1 >= len(b) {
			return -1
		}
		switch b[k+1] {
		case '"', '\\', '\n', '\r', '\f':
			if e := memberNameEnd(b, k); e >= 0 {
				if s := secretFieldName(b, e); s >= 0 {
					return s
				}
			}
		case ' ', '\t':
			if e := memberNameEnd(b, k); e >= 0 {
				if s := secretFieldName(b, e); s >= 0 {
					return s
				}
			}
			if e := fieldNameEnd(b, k); e >= 0 {
				if s := secretFieldName(b, e); s >= 0 {
					return s
				}
			}
		}
	}
}

// memberNameEnd returns where the name ends when the ':' at b[k] separates
// a JSON member as secret_field's first alternative requires
// ("name"\s*:\s*"value or \"name\"\s*:\s*\"value), or -1.
func memberNameEnd(b []byte, k int) int {
	e := k
	for e > 0 && isSpace(b[e-1]) {
		e--
	}
	if e == 0 || b[e-1] != '"' {
		return -1
	}
	e--
	if e > 0 && b[e-1] == '\\' {
		if e-1 == 0 || secretFieldByLast[b[e-2]] == nil {
			return -1
		}
	} else if e == 0 || secretFieldByLast[b[e-1]] == nil {
		return -1 // no secret word ends so: spare the value's tests
	}
	v := skipSpace(b, k+1)
	if e > 0 && b[e-1] == '\\' {
		e--
		if v+1 >= len(b) || b[v] != '\\' || b[v+1] != '"' {
			return -1
		}
		v += 2
	} else {
		if v >= len(b) || b[v] != '"' {
			return -1
		}
		v++
	}
	if !memberValue(b[v:]) {
		return -1
	}
	return e
}

// fieldNameEnd returns where the name ends when the ':' at b[k] separates
// name: value as secret_field's second alternative requires
// (name[ \t]*:[ \t]+('|\\")?value), or -1.
func fieldNameEnd(b []byte, k int) int {
	v := k + 1
	for v < len(b) && (b[v] == ' ' || b[v] == '\t') {
		v++
	}
	if v == k+1 {
		return -1
	}
	if v < len(b) && b[v] == '\'' {
		v++
	} else if v+1 < len(b) && b[v] == '\\' && b[v+1] == '"' {
		v += 2
	}
	if v >= len(b) || b[v] == '$' || !hasRun(b[v:], isValueChar, 4) {
		return -1
	}
	e := k
	for e > 0 && (b[e-1] == ' ' || b[e-1] == '\t') {
		e--
	}
	return e
}

// memberValue reports whether b starts with the four characters or escape
// pairs (never \") that secret_member's value needs.
func memberValue(b []byte) bool {
	n := 0
	for k := 0; k < len(b) && n < 4; n++ {
		switch {
		case b[k] == '"':
			return false
		case b[k] == '\\':
			if k+1 >= len(b) || b[k+1] == '"' {
				return false
			}
			k += 2
		default:
			k++
		}
	}
	return n == 4
}

// looksSecretValue is looksSecret for the value of a secret-named field,
// which is not a reference or a placeholder ($VAR, ${VAR}, <changeme>,
// {{ secrets.x }}) nor a value already redacted.
func looksSecretValue(v []byte) bool {
	v, _ = decodedView(v) // <changeme> may be spelled \u003cchangeme\u003e
	if len(v) == 0 || bytes.IndexByte([]byte("$<{%"), v[0]) >= 0 || isMarker(v) {
		return false
	}
	return looksSecret(v)
}

// isMarker reports whether v is one redaction marker, [REDACTED:name].
func isMarker(v []byte) bool {
	if !bytes.HasPrefix(v, []byte("[REDACTED:")) || len(v) < len("[REDACTED:]") || v[len(v)-1] != ']' {
		return false
	}
	for _, c := range v[len("[REDACTED:") : len(v)-1] {
		if !isWordChar(c) {
			return false
		}
	}
	return true
}
