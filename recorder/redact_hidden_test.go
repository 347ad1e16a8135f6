package recorder

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// The seven forms of a secret the raw patterns alone let through, each
// planted as a tool output would carry it: as raw text (a blob) and inside
// a trajectory line (one more level of escaping).
//
//  1. JSON-escaped with \/ (PHP's json_encode, some loggers).
//  2. JSON-escaped with \uXXXX (sk\u002dant\u002d..., any escape of a
//     key character, nested escapes too).
//  3. A JSON member or YAML field whose name says it is a secret
//     ("db_password": "...", password: ...).
//  4. An env-file assignment to a secret name (*_CREDENTIAL=...).
//  5. base64 of a known key format, at any alignment, wrapped or not.
//  6. A multi-line private key, with real newlines or \n escapes.
//  7. A value of non-standard length, redacted whole rather than to the
//     standard length.
//
// URL-encoding (%2D) is undone as the escapes of form 2 are.
func TestSecretsHiddenByEncodingAreRedacted(t *testing.T) {
	ant := "sk-ant-api03-" + fakeAlnum(40) + "-Zz9"
	pemBody := strings.Repeat(fakeKeyLine1, 2)[:64]
	pem := "-----BEGIN EC PRIVATE KEY-----\n" + pemBody + "\n" + fakeKeyLine2 + "\n-----END EC PRIVATE KEY-----"
	b64 := base64.StdEncoding.EncodeToString([]byte(ant))
	wrapped := base64.StdEncoding.EncodeToString([]byte("ANTHROPIC_API_KEY=" + ant + "\nOTHER=1\n"))
	wrapped = wrapped[:76] + "\n" + wrapped[76:]
	tests := []struct {
		form   int
		name   string
		text   string
		pieces []string // none may remain
	}{
		{1, `an AWS secret whose slashes are escaped as \/`,
			`{"aws_secret_access_key":"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY"}`, []string{"wJalrXUtnFEMI", "K7MDENG", "bPxRfiCY"}},
		{1, `a URL password in a URL whose slashes are escaped`,
			`{"url":"postgres:\/\/deploy:` + fakePassword + `@db:5432\/app"}`, []string{"Pa55w0rd"}},
		{2, `an Anthropic key whose dashes are \u escapes`,
			`{"key":"` + strings.ReplaceAll(ant, "-", `\u002d`) + `"}`, []string{fakeAlnum(40)}},
		{2, `a GitHub token spelled entirely in \u escapes`,
			`{"t":"` + uEscape("ghp_"+fakeAlnum(36)) + `"}`, []string{uEscape(fakeAlnum(36))[:60]}},
		{2, `a key URL-encoded in a query string`,
			`GET /hook?k=sk%2Dant%2Dapi03%2D` + fakeAlnum(40) + ` HTTP/1.1`, []string{fakeAlnum(40)}},
		{3, `a JSON member named db_password`,
			`{"host":"db","db_password": "Tr0ub4dor&3 horse"}`, []string{"Tr0ub4dor", "horse"}},
		{3, `a YAML password field`,
			"database:\n  user: app\n  password: Zq9-kV2_mW7x\n", []string{"Zq9-kV2_mW7x"}},
		{4, `an env assignment to *_CREDENTIAL`,
			"GCP_CREDENTIAL=" + fakeAlnum(30) + "\n", []string{fakeAlnum(30)}},
		{5, `base64 of an Anthropic key`,
			"value: " + b64 + "\n", []string{b64[8:40], b64[len(b64)-20:]}},
		{5, `base64 of an env file holding a key, wrapped at 76 columns`,
			"data:\n" + wrapped + "\n", []string{wrapped[20:60], wrapped[80:100], wrapped[len(wrapped)-12:]}},
		{5, `base64url of an AWS access key id in a JSON member`,
			`{"k":"` + base64.RawURLEncoding.EncodeToString([]byte(fakeAWSKeyID)) + `"}`, []string{base64.RawURLEncoding.EncodeToString([]byte(fakeAWSKeyID))[4:20]}},
		{6, `a PEM key with real newlines`,
			"key:\n" + pem + "\nnext", []string{pemBody[:20], fakeKeyLine2[:20]}},
		{6, `a PEM key as a JSON string with \n escapes`,
			`{"private_key":"` + strings.ReplaceAll(pem, "\n", `\n`) + `","n":1}`, []string{pemBody[:20], fakeKeyLine2[:20]}},
		{7, `an AWS access key id longer than the standard 20`,
			"id " + fakeAWSKeyID + "QQQQ7 end", []string{"EXAMPLE", "QQQQ7"}},
		{7, `an AWS secret longer than the standard 40`,
			"aws_secret_access_key = " + fakeAWSSecret + "ABCD==\n", []string{"EXAMPLEKEY", "ABCD"}},
		{7, `an npm token longer than the standard 36`,
			"//registry/:_authToken=npm_" + fakeAlnum(44) + "\n", []string{fakeAlnum(44)[30:]}},
		{7, `a Google API key longer than the standard 39`,
			"key=AIza" + fakeAlnum(42) + "&x=1", []string{fakeAlnum(42)[30:]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, in := range [][]byte{[]byte(tt.text), textLine(t, tt.text)} {
				out, n := DefaultRedactor().Redact(in)
				if n == 0 {
					t.Fatalf("form %d: nothing redacted in %s", tt.form, in)
				}
				for _, p := range tt.pieces {
					if bytes.Contains(out, []byte(p)) {
						t.Errorf("form %d: %q is still there:\nin:  %s\nout: %s", tt.form, p, in, out)
					}
				}
				if json.Valid(in) && !json.Valid(out) {
					t.Errorf("valid JSON became invalid: %s", out)
				}
				if again, m := DefaultRedactor().Redact(out); m != 0 || !bytes.Equal(again, out) {
					t.Errorf("not idempotent: %d more in %s", m, out)
				}
				if name := DefaultRedactor().Detect(in); name == "" {
					t.Errorf("Detect finds nothing in %s", in)
				}
			}
		})
	}
}

func uEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteString(`\u00`)
		b.WriteString(strings.ToLower(string("0123456789ABCDEF"[c>>4]) + string("0123456789ABCDEF"[c&15])))
	}
	return b.String()
}

func TestEncodedTextWithoutSecretsIsLeftAlone(t *testing.T) {
	for _, text := range []string{
		`{"path":"C:\/Users\/alice\/project","msg":"caf\u00e9 \u003cb\u003e"}`,
		"GET /search?q=hello%20world%2Fdocs&page=2 coverage: 81.2% of statements",
		"data: aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZGF0YSB0aGF0IGlzIG5vdCBhIHNlY3JldA==",
		`{"max_tokens": "4096", "token_type": "bearer", "password": "$DB_PASSWORD", "secret": "<changeme>"}`,
		"password: ${{ secrets.DB }}\ntoken: required\n",
		"c2stYWJj is base64 of sk-abc, too short to be a key",
	} {
		for _, in := range [][]byte{[]byte(text), textLine(t, text)} {
			if out, n := DefaultRedactor().Redact(in); n != 0 {
				t.Errorf("redacted %d in clean text:\nin:  %s\nout: %s", n, in, out)
			}
		}
	}
}

// FuzzRedactHidden checks the passes over escapes and base64 the way a
// fuzzer can afford to (FuzzRedact also compares with a redactor without
// find functions, which is slow): no panic, the result is idempotent,
// Detect finds nothing in it, and a JSON line stays valid JSON.
func FuzzRedactHidden(f *testing.F) {
	ant := "sk-ant-api03-" + fakeAlnum(40)
	f.Add([]byte(`{"k":"` + strings.ReplaceAll(ant, "-", `\u002d`) + `"}`))
	f.Add(textLine(f, `{"aws_secret_access_key":"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY","url":"https:\/\/a:b1c2d3@h"}`))
	f.Add(textLine(f, "k=sk%2Dant%2Dapi03%2D"+fakeAlnum(24)+" and \\x41KIA"+fakeAlnum(16)))
	f.Add(textLine(f, "password: Zq9-kV2_mW7x\nGCP_CREDENTIAL=abc123def\n"+`{"db_password": "Tr0ub4dor&3"}`))
	f.Add(textLine(f, "v: "+base64.StdEncoding.EncodeToString([]byte("X="+ant+"\n"+fakePrivateKey))))
	f.Add([]byte(`{"":"\bQUtJQU1BU01BR01BN01BQ01BT00"}`))
	f.Add([]byte(`{"private_key":"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\u002d\n-----END EC PRIVATE KEY-----","x":"\\u0041KIA"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		out, _ := DefaultRedactor().Redact(line)
		if json.Valid(line) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\nin:  %q\nout: %q", line, out)
		}
		if again, n := DefaultRedactor().Redact(out); n != 0 || !bytes.Equal(again, out) {
			t.Fatalf("redacting twice found %d more:\nin:    %q\nonce:  %q\ntwice: %q", n, line, out, again)
		}
		if name := DefaultRedactor().Detect(out); name != "" {
			t.Fatalf("Detect finds %s in redacted text:\n%q", name, out)
		}
	})
}
