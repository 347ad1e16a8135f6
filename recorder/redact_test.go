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
		{"a GitLab personal access token is redacted",
			textLine(t, "CI_TOKEN glpat-"+fakeAlnum(20)), "glpat-", "[REDACTED:gitlab]", "CI_TOKEN ", 1},
		{"a Slack bot token is redacted",
			textLine(t, "slack: xoxb-1234567890-"+fakeAlnum(24)), "xoxb-", "[REDACTED:slack]", "slack: ", 1},
		{"a Stripe live secret key is redacted",
			textLine(t, "stripe.api_key = 'sk_live_"+fakeAlnum(24)+"'"), "sk_live_", "[REDACTED:stripe]", "stripe.api_key = '", 1},
		{"a Stripe restricted key is redacted",
			textLine(t, "rk_live_"+fakeAlnum(24)), "rk_live_", "[REDACTED:stripe]", `"text":"[`, 1},
		{"a Google API key is redacted",
			textLine(t, "https://maps.googleapis.com/maps/api/js?key=AIza"+fakeAlnum(35)), "AIza", "[REDACTED:google_api_key]", "maps/api/js?key=", 1},
		{"an npm token is redacted",
			textLine(t, "//registry.npmjs.org/:_authToken=npm_"+fakeAlnum(36)), "npm_", "[REDACTED:npm]", "registry.npmjs.org", 1},
		{"a Hugging Face token is redacted",
			textLine(t, "HF token hf_"+fakeAlnum(34)), "hf_", "[REDACTED:huggingface]", "HF token ", 1},
		{"a JSON Web Token outside a header is redacted whole",
			textLine(t, "session="+fakeBearerToken+";"), fakeBearerToken[40:], "[REDACTED:jwt]", "session=", 1},
		{"a password in a URL is redacted and the scheme, user and host kept",
			textLine(t, "git clone https://alice:"+fakePassword+"@git.example.com/repo.git"), fakePassword, "https://alice:[REDACTED:url_password]@git.example.com/repo.git", "git clone ", 1},
		{"a password in a URL without a user is redacted",
			textLine(t, "redis://:"+fakePassword+"@cache:6379/0"), fakePassword, "redis://:[REDACTED:url_password]@cache", ":6379/0", 1},
		{"a password in a URL inside embedded JSON is redacted",
			[]byte(`{"v":1,"type":"tool_call","input":{"url":"postgres://app:` + fakePassword + `@db:5432/app"}}`), fakePassword, "[REDACTED:url_password]@db", `"type":"tool_call"`, 1},
		{"a basic Authorization header is redacted",
			textLine(t, "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='"), "dXNlcjpwYXNzd29yZA", "Authorization: Basic [REDACTED:auth_header]", "curl -H '", 1},
		{"a short bearer token in an Authorization header is redacted",
			textLine(t, "Authorization: Bearer abc123def456"), "abc123def456", "[REDACTED:auth_header]", "Authorization: Bearer ", 1},
		{"an x-api-key header is redacted",
			textLine(t, "x-api-key: 0123abcd4567efgh"), "0123abcd4567efgh", "x-api-key: [REDACTED:auth_header]", "x-api-key", 1},
		{"an Authorization member of an embedded JSON object is redacted",
			[]byte(`{"v":1,"type":"tool_call","input":{"headers":{"Authorization":"token 9f8e7d6c5b4a39281706"}}}`), "9f8e7d6c5b4a39281706", "[REDACTED:auth_header]", `"headers":{"Authorization":"token `, 1},
		{"a password assignment in an env file is redacted and the name kept",
			textLine(t, "DB_HOST=db\nDB_PASSWORD="+fakePassword+"\n"), fakePassword, "DB_PASSWORD=[REDACTED:secret_assignment]", "DB_HOST=db", 1},
		{"an exported quoted token is redacted",
			textLine(t, "export SERVICE_TOKEN='"+fakePassword+"'"), fakePassword, "SERVICE_TOKEN='[REDACTED:secret_assignment]'", "export ", 1},
		{"an api-key flag is redacted",
			textLine(t, "tool --api-key="+fakePassword+" run"), fakePassword, "--api-key=[REDACTED:secret_assignment]", " run", 1},
		{"a secret in a URL query is redacted",
			textLine(t, "GET /callback?code=x&access_token=ya29."+fakeAlnum(30)+"&state=1"), "ya29.", `access_token=[REDACTED:secret_assignment]\u0026state=1`, "GET /callback", 1},
		{"the AWS CLI's SecretAccessKey is redacted",
			textLine(t, `{"Credentials": {"AccessKeyId": "ASIAQWERTYUIOPASDFGH", "SecretAccessKey": "`+fakeAWSSecret+`"}}`), fakeAWSSecret, "[REDACTED:aws_secret]", "Credentials", 2},
		{"a private key assigned in an env file is redacted whole",
			textLine(t, "PRIVATE_KEY=\""+fakePrivateKey+"\""), fakeKeyLine2, "[REDACTED:private_key]", "PRIVATE_KEY=", 1},
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

// fakeAlnum returns n letters and digits that look random but are fixed.
func fakeAlnum(n int) string {
	const chars = "Xq7vLm2Np9Rt4Kw8Zs1Bc6Df3Gh5Jy0UaEiOoP"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[(i*7+3)%len(chars)]
	}
	return string(b)
}

const fakePassword = "hunter2-Pa55w0rd!x"

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
		{"a UUID", "request 0d9e8f7a-6b5c-4d3e-8f1a-3f9a8b7c6d5e failed"},
		{"a sha256 digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"words that start like tokens", "xoxo- hugs, npm_config_cache, hf_hub_download, glpat- docs, sk_live_mode and AIza short"},
		{"a base64 JSON that is not a JWT", "eyJhbGciOiJIUzI1NiJ9 alone and eyJhbGciOi.notpayload"},
		{"URLs without a password", "https://github.com/example/project and ssh://git@github.com:22/x.git and http://localhost:8080/a:b@c"},
		{"a URL whose user has no password", "https://alice@example.com/path"},
		{"a scp-style git remote", "git@github.com:example/project.git"},
		{"an Authorization header read in code", `token := r.Header.Get("Authorization")`},
		{"Authorization in prose", "Authorization: required for every endpoint; x-api-key: see the docs"},
		{"an Authorization header with a placeholder", "Authorization: Bearer <token>"},
		{"code that assigns a token with spaces", "token = compute_token(user); password = getpass()"},
		{"a token assignment to a call or a member", "token=os.Getenv(\"TOKEN\") password=req.body.password"},
		{"an env file with variable references and placeholders", "DB_PASSWORD=$DB_PASSWORD\nAPI_KEY=${API_KEY}\nSECRET=<changeme>\nTOKEN="},
		{"numbers and paths under secret names", "MAX_TOKENS=4096 SECRETS_DIR=/run/secrets TOKENIZER=bert"},
		{"comparisons in code", "if password==expected && token!=nil {}"},
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

func mustRedact(r *Redactor, b []byte) []byte {
	out, _ := r.Redact(b)
	return out
}

func TestLongSecretsAndFarCandidatesAreFoundPastTheFirstWindow(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJ" + strings.Repeat("c3ViIjoiYWxpY2UiLCJyb2xlcyI6WyJhZG1pbiJdfQ", 120) + ".c2ln"
	pemBody := strings.Repeat(fakeKeyLine1+"\n", 200)
	text := "set aws_secret_access_key in the file; Authorization: see below\n" + // false candidates first
		strings.Repeat("filler line of ordinary output\n", 100) +
		"token " + jwt + "\n" +
		strings.Repeat("more filler\n", 300) +
		"-----BEGIN PRIVATE KEY-----\n" + pemBody + "-----END PRIVATE KEY-----\n" +
		strings.Repeat("and more\n", 500) + "aws_secret_access_key = " + fakeAWSSecret + "\n"
	unfiltered := &Redactor{patterns: append([]pattern(nil), builtins...)}
	for i := range unfiltered.patterns {
		unfiltered.patterns[i].find = nil
	}
	for _, in := range [][]byte{[]byte(text), textLine(t, text)} {
		out := mustRedact(DefaultRedactor(), in)
		if !bytes.Equal(out, mustRedact(unfiltered, in)) {
			t.Fatal("the windowed search and a search of the whole text differ")
		}
		for _, secret := range []string{jwt[30:60], fakeKeyLine1, fakeAWSSecret} {
			if bytes.Contains(out, []byte(secret)) {
				t.Errorf("%q is still there", secret)
			}
		}
		if bytes.Count(out, []byte("[REDACTED:")) != 3 {
			t.Errorf("want 3 redactions: %s", out)
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
	f.Add(textLine(f, "https://alice:"+fakePassword+"@git.example.com redis://:x@h ://a:b@"))
	f.Add(textLine(f, "Authorization: Basic dXNlcjpwYXNzd29yZA==\nx-api-key: 0123abcd4567efgh"))
	f.Add([]byte(`{"headers":{"Authorization":"token 9f8e7d6c5b4a39281706","X-Api-Key":"k3y"}}`))
	f.Add(textLine(f, "DB_PASSWORD="+fakePassword+"\nexport API_KEY='abc123xyz' --api-key=\"q1w2e3r4\" password==x"))
	f.Add(textLine(f, "glpat-"+fakeAlnum(20)+" xoxb-1234567890-ab sk_live_"+fakeAlnum(16)+" AIza"+fakeAlnum(35)+" npm_"+fakeAlnum(36)+" hf_"+fakeAlnum(34)))
	f.Add(textLine(f, fakeBearerToken+" eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."))
	f.Add([]byte("plain text, not JSON: PRIVATE_KEY=-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"))
	f.Add([]byte(`{"k":"sk\u002dant\u002dapi03\u002d` + fakeAlnum(30) + `","u":"https:\/\/a:b1c2d3@h"}`))
	f.Add(textLine(f, `{"db_password": "Tr0ub4dor&3", "aws_secret_access_key":"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY"}`))
	f.Add(textLine(f, "password: Zq9-kV2_mW7x\nGCP_CREDENTIAL=abc123def\nk=sk%2Dant%2Dapi03%2D"+fakeAlnum(24)))
	f.Add(textLine(f, "v: c2stYW50LWFwaTAzLVhxN3ZMbTJOcDlSdDRLdzhaczFCYzZEZjNHaDVKeTBVYS1FaV9Pb1B4\nQUtJQUlPU0ZPRE5ON0VYQU1QTEU="))
	f.Add([]byte(`{"private_key":"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\u002d\n-----END EC PRIVATE KEY-----","x":"\\u0041KIA"}`))
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
		if valid && slow && !hidesEscapes(line) {
			// Only a secret found in the decoded view of the line's own
			// escapes may span a string boundary of the raw line.
			t.Fatalf("a built-in pattern broke the JSON and needed the slow path:\nin: %s", line)
		}
		if want, _, _ := unfiltered.redact(line); !bytes.Equal(out, want) {
			t.Fatalf("the find functions changed the result:\nin:   %s\nout:  %s\nwant: %s", line, out, want)
		}
		// Past the first window the regexps run near candidates only;
		// padding moves the input there. (Matches longer than a window
		// are TestLongSecretsAndFarCandidatesAreFoundPastTheFirstWindow's.)
		long := append(bytes.Repeat([]byte("pad "), window/4), line...)
		if got, want := mustRedact(DefaultRedactor(), long), mustRedact(unfiltered, long); !bytes.Equal(got, want) {
			t.Fatalf("windowed search changed the result of a long input built from:\n%s", line)
		}
		// Redaction is idempotent: what it leaves has no secret left.
		if again, n := DefaultRedactor().Redact(out); n != 0 || !bytes.Equal(again, out) {
			t.Fatalf("redacting twice found %d more:\nin:    %s\nonce:  %s\ntwice: %s", n, line, out, again)
		}
		if name := DefaultRedactor().Detect(out); name != "" {
			t.Fatalf("Detect finds %s in redacted text:\n%s", name, out)
		}
		if _, n := DefaultRedactor().Redact(line); (n > 0) != (DefaultRedactor().Detect(line) != "") {
			t.Fatalf("Detect and Redact disagree (%d redactions):\n%s", n, line)
		}
		out, _ = custom.Redact(line)
		if valid && !json.Valid(out) {
			t.Fatalf("with user patterns, valid JSON became invalid:\nin:  %s\nout: %s", line, out)
		}
	})
}
