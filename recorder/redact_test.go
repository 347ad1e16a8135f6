package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp/syntax"
	"strings"
	"testing"
)

// textLine returns an encoded trajectory-like line whose "text" field
// holds s, escaped as the encoder escapes it.
func textLine(t testing.TB, s string) []byte {
	t.Helper()
	q, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"v":1,"type":"tool_result","text":` + string(q) + `,"display":"full"}`)
}

func TestEachBuiltinPatternFires(t *testing.T) {
	tests := []struct {
		name   string
		line   []byte
		secret string // must be gone
		marker string // must be there
		keep   string // context that must survive
		n      int
	}{
		{"an Anthropic key is redacted as anthropic, not openai",
			textLine(t, "export ANTHROPIC_API_KEY="+fakeAnthropicKey), fakeAnthropicKey, "[REDACTED:anthropic]", "export ANTHROPIC_API_KEY=", 1},
		{"an OpenAI project key is redacted",
			textLine(t, "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_A7bC0dE"), "sk-proj-Ab3d", "[REDACTED:openai]", "OPENAI_API_KEY=", 1},
		{"a legacy OpenAI key after an encoded newline is redacted",
			textLine(t, "key:\nsk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2n"), "Ab3dEf6hIj9k", "[REDACTED:openai]", `key:\n`, 1},
		{"an AWS access key id is redacted",
			textLine(t, "aws_access_key_id = "+fakeAWSKeyID), fakeAWSKeyID, "[REDACTED:aws_access_key]", "aws_access_key_id = ", 1},
		{"an AWS temporary access key id is redacted",
			textLine(t, "id ASIAQWERTYUIOPASDFGH."), "ASIAQWERTYUIOPASDFGH", "[REDACTED:aws_access_key]", "id ", 1},
		{"an AWS secret in a credentials file is redacted, its key name kept",
			textLine(t, "[default]\naws_secret_access_key = "+fakeAWSSecret+"\n"), fakeAWSSecret, "[REDACTED:aws_secret]", "aws_secret_access_key = ", 1},
		{"an AWS secret in an environment variable is redacted",
			textLine(t, "AWS_SECRET_ACCESS_KEY='"+fakeAWSSecret+"' aws s3 ls"), fakeAWSSecret, "[REDACTED:aws_secret]", "aws s3 ls", 1},
		{"an AWS secret as a member of an embedded JSON input is redacted",
			[]byte(`{"v":1,"type":"tool_call","input":{"aws_secret_access_key": "` + fakeAWSSecret + `","region":"eu-west-1"}}`), fakeAWSSecret, "[REDACTED:aws_secret]", `"region":"eu-west-1"`, 1},
		{"an AWS secret in JSON escaped inside a string is redacted",
			textLine(t, `{"aws_secret_access_key": "`+fakeAWSSecret+`"}`), fakeAWSSecret, "[REDACTED:aws_secret]", `{\"aws_secret_access_key\": \"`, 1},
		{"a classic GitHub token is redacted",
			textLine(t, "GITHUB_TOKEN=ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d"), "ghp_Ab3d", "[REDACTED:github]", "GITHUB_TOKEN=", 1},
		{"a fine-grained GitHub token is redacted",
			textLine(t, "token: github_pat_11ABCDEFG0123456789_abcdefghijKLMNOPQRSTUV"), "github_pat_11", "[REDACTED:github]", "token: ", 1},
		{"a bearer token is redacted and the word Bearer kept",
			textLine(t, "curl -H 'Authorization: Bearer "+fakeBearerToken+"' https://x"), fakeBearerToken, "Bearer [REDACTED:bearer]", "' https://x", 1},
		{"a bearer token after an encoded tab in any case is redacted",
			textLine(t, "authorization: BEARER\t"+fakeBearerToken), fakeBearerToken, `BEARER\t[REDACTED:bearer]`, "authorization: ", 1},
		{"a private key block with real newlines is redacted whole",
			textLine(t, "key:\n"+fakePrivateKey+"done"), fakeKeyLine1, "[REDACTED:private_key]", `\ndone`, 1},
		{"a private key block cut off by truncation is redacted to the end of its string",
			textLine(t, "-----BEGIN OPENSSH PRIVATE KEY-----\n"+fakeKeyLine1+"\n"+fakeKeyLine2[:20]), fakeKeyLine2[:20], "[REDACTED:private_key]", `"display":"full"`, 1},
		{"two secrets in one string are both redacted",
			textLine(t, fakeAWSKeyID+" and "+fakeAnthropicKey), fakeAWSKeyID, "[REDACTED:anthropic]", " and ", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := bytes.Clone(tt.line)
			out, n, slow := DefaultRedactor().redact(tt.line)
			if !bytes.Equal(tt.line, orig) {
				t.Fatal("Redact changed its input")
			}
			if slow {
				t.Error("a built-in pattern needed the slow path")
			}
			if !json.Valid(out) {
				t.Fatalf("output is not valid JSON: %s", out)
			}
			if n != tt.n {
				t.Errorf("n = %d, want %d (out: %s)", n, tt.n, out)
			}
			for _, bad := range []string{tt.secret} {
				if bytes.Contains(out, []byte(bad)) {
					t.Errorf("the secret %q is still there: %s", bad, out)
				}
			}
			for _, good := range []string{tt.marker, tt.keep} {
				if !bytes.Contains(out, []byte(good)) {
					t.Errorf("output lacks %q: %s", good, out)
				}
			}
		})
	}
}

func TestTheZeroRedactorStillRedacts(t *testing.T) {
	line := textLine(t, "key "+fakeAnthropicKey)
	for name, red := range map[string]*Redactor{"zero": {}, "nil": nil} {
		if out, n := red.Redact(line); n != 1 || bytes.Contains(out, []byte(fakeAnthropicKey)) {
			t.Errorf("%s Redactor: n = %d, out = %s", name, n, out)
		}
	}
}

func TestCleanLinesAreLeftAlone(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"sk- followed by short text", "use sk-abc or sk-1234 here"},
		{"a kebab-case name that contains sk-", "restart disk-usage-monitoring-service-name-long and task-runner-with-a-long-name"},
		{"a git sha", "commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"},
		{"a normal base64 word", "payload aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZGF0YQ=="},
		{"bearer in prose with a short next word", "the bearer of bad news; Bearer token required"},
		{"AKIA that is too short or inside a word", "AKIA123 and MALAKIAIOSFODNN7EXAMPLE"},
		{"upper-case prose starting with ASIA", "ASIAN MARKETS"},
		{"PRIVATE KEY in prose", "never commit a PRIVATE KEY to git"},
		{"gh words that are not tokens", "gh_pages ghp_short thoughts highlight github_pat_short"},
		{"an aws_secret_access_key setting without a value", "set aws_secret_access_key in ~/.aws/credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := textLine(t, tt.text)
			out, n := DefaultRedactor().Redact(line)
			if n != 0 || !bytes.Equal(out, line) {
				t.Errorf("redacted %d times: %s", n, out)
			}
			if len(out) > 0 && &out[0] != &line[0] {
				t.Error("a clean line was copied; Redact should return it as is")
			}
		})
	}
}

func TestUserPatternsAreApplied(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		text     string
		secret   string
		slow     bool
	}{
		{"a pattern that keeps the JSON intact is applied in place", []string{`internal\.corp\.example\.com`},
			"ssh internal.corp.example.com", "internal.corp", false},
		{"a case-insensitive pattern matches in any case", []string{`(?i)hunter2`},
			"the password is HUNTER2", "HUNTER2", false},
		{"a pattern with a literal prefix is found anywhere in the line", []string{`corp-[0-9]{6}`},
			"ticket corp-123456 and corp-654321", "corp-654321", false},
		{"a pattern that eats the closing quote falls back and still redacts", []string{`pw=\S+`},
			"login pw=hunter2", "hunter2", true},
		{"a pattern that spans a quote falls back and still redacts", []string{`secret-[a-z0-9]+"?`},
			"secret-abc123", "abc123", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			red, err := NewRedactor(tt.patterns)
			if err != nil {
				t.Fatal(err)
			}
			line := textLine(t, tt.text)
			out, n, slow := red.redact(line)
			if !json.Valid(out) {
				t.Fatalf("output is not valid JSON: %s", out)
			}
			if n == 0 || bytes.Contains(out, []byte(tt.secret)) || !bytes.Contains(out, []byte("[REDACTED:custom]")) {
				t.Errorf("n = %d, out = %s; want %q redacted", n, out, tt.secret)
			}
			if slow != tt.slow {
				t.Errorf("slow path = %v, want %v", slow, tt.slow)
			}
			// The slow path keeps the member order of the line.
			if !bytes.HasPrefix(out, []byte(`{"v":1,"type":"tool_result","text":`)) || !bytes.HasSuffix(out, []byte(`,"display":"full"}`)) {
				t.Errorf("the line lost its shape: %s", out)
			}
		})
	}
}

func TestTheSlowPathRedactsKeysAndKeepsNumbers(t *testing.T) {
	red, err := NewRedactor([]string{`pw=\S+`})
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"a":1.50,"pw=k1":[true,null,"pw=v1",{"x":-2e3}],"b":"<&>"}`)
	out, n, slow := red.redact(line)
	want := `{"a":1.50,"[REDACTED:custom]":[true,null,"[REDACTED:custom]",{"x":-2e3}],"b":"<&>"}`
	if string(out) != want || n != 2 || !slow {
		t.Errorf("got %s (n=%d, slow=%v), want %s", out, n, slow, want)
	}
}

func TestNewRedactorRejectsBadPatterns(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		want     string
		syntax   bool
	}{
		{"a pattern that does not compile is named by index", []string{`ok`, `[a-`}, "redaction pattern 1", true},
		{"a pattern that matches the empty string is refused", []string{`x*`}, "matches the empty string", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRedactor(tt.patterns)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			var se *syntax.Error
			if errors.As(err, &se) != tt.syntax {
				t.Errorf("errors.As(*syntax.Error) = %v, want %v", !tt.syntax, tt.syntax)
			}
		})
	}
}

func TestIndexFoldFindsTheFirstInstanceInAnyCase(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"Authorization: Bearer x", 15},
		{"BEARER", 0},
		{"xbEaReR", 1},
		{"bearebearer", 5},
		{"BEARER bearer", 0},
		{"bearer BEARER", 0},
		{"beare", -1},
		{"", -1},
		{"bbbbbbbbbb", -1},
	}
	for _, tt := range tests {
		if got := indexFold([]byte(tt.s), "bearer", 0); got != tt.want {
			t.Errorf("indexFold(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestIndexAtFindsTheFirstInstanceByItsAnchor(t *testing.T) {
	tests := []struct {
		s, lit string
		anchor int
		want   int
	}{
		{"sk-", "sk-", 1, 0},
		{"ask task-sk-x", "sk-", 1, 6},
		{"kk sk-", "sk-", 1, 3},
		{"k", "sk-", 1, -1},
		{"sk", "sk-", 1, -1},
		{"xx-----BEGIN", "-----BEGIN", 5, 2},
		{"BEGIN-----BEGIN", "-----BEGIN", 5, 5},
		{"", "sk-", 1, -1},
	}
	for _, tt := range tests {
		if got := indexAt([]byte(tt.s), tt.lit, tt.anchor); got != tt.want {
			t.Errorf("indexAt(%q, %q, %d) = %d, want %d", tt.s, tt.lit, tt.anchor, got, tt.want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add(textLine(f, "curl -H 'Authorization: Bearer "+fakeBearerToken+"'"))
	f.Add(textLine(f, fakePrivateKey))
	f.Add(textLine(f, "-----BEGIN PRIVATE KEY-----\nabc\\\"def"))
	f.Add(textLine(f, "aws_secret_access_key = "+fakeAWSSecret+" and "+fakeAWSKeyID))
	f.Add([]byte(`{"input":{"aws_secret_access_key":"` + fakeAWSSecret + `"},"k":"\u00e9sk-ant-aaaaaaaaaaaaaaaaaaaaaaaaa"}`))
	f.Add([]byte(`["ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d","bearer\\nabcdefghijklmnopqrstuvwxyz"]`))
	f.Add([]byte(`{"pw":"pw=secret","n":1}`))
	f.Add([]byte(`{"a":"AWS_Secret_Access_Key\": \"` + fakeAWSSecret + `\"","b":"x\tBeArEr\tabcdefghijklmnopqrstu"}`))
	f.Add([]byte(`"ASIAQWERTYUIOPASDFGH\u00e9AKIAIOSFODNN7EXAMPLE github_pat_11ABCDEFG0123456789_abcdefghij"`))
	custom, err := NewRedactor([]string{`pw=\S+`, `"[a-z]+":`})
	if err != nil {
		f.Fatal(err)
	}
	// The find functions only save time: without them, every regexp runs
	// over the whole line, and the result must be the same.
	unfiltered := &Redactor{patterns: append([]pattern(nil), builtins...)}
	for i := range unfiltered.patterns {
		unfiltered.patterns[i].find = nil
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		valid := json.Valid(line)
		out, _, slow := DefaultRedactor().redact(line)
		if valid && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\nin:  %s\nout: %s", line, out)
		}
		if valid && slow {
			t.Fatalf("a built-in pattern broke the JSON and needed the slow path:\nin: %s", line)
		}
		if want, _, _ := unfiltered.redact(line); !bytes.Equal(out, want) {
			t.Fatalf("the find functions changed the result:\nin:   %s\nout:  %s\nwant: %s", line, out, want)
		}
		out, _ = custom.Redact(line)
		if valid && !json.Valid(out) {
			t.Fatalf("with user patterns, valid JSON became invalid:\nin:  %s\nout: %s", line, out)
		}
	})
}
