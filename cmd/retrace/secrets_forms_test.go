package main

import (
	"database/sql"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// The seven forms of a secret the raw patterns alone let through (see
// recorder's TestSecretsHiddenByEncodingAreRedacted and docs/secrets.md),
// planted fresh on every run, each in a model reply and in a tool output:
//
//  1. JSON-escaped with \/ (an AWS secret key whose slashes are \/).
//  2. JSON-escaped with \u (an Anthropic key whose dashes are \u002d).
//  3. A JSON member named for a secret ("db_password": "...").
//  4. An env assignment to *_CREDENTIAL.
//  5. base64 of a known key format (a GitHub token).
//  6. A multi-line PEM private key, with \n escapes inside JSON.
//  7. A key of non-standard length (an AWS access key id 8 characters
//     longer than the standard 20).
type secretForm struct {
	form int
	plantedSecret
	text string // how the form spells it in a file or a reply
}

func plantForms(t *testing.T) []secretForm {
	t.Helper()
	aws := randomChars(t, alnum, 12) + "/" + randomChars(t, alnum, 13) + "/" + randomChars(t, alnum, 13)
	ant := randomChars(t, keyABC, 60) + "AA"
	pw := randomChars(t, alnum, 14) + "7#"
	cred := randomChars(t, alnum, 30) + "9"
	gh := "ghp_" + randomChars(t, alnum, 36)
	gh64 := base64.StdEncoding.EncodeToString([]byte(gh))
	var pemLines []string
	for range 6 {
		pemLines = append(pemLines, randomChars(t, b64, 64))
	}
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(pemLines, "\n") + "\n-----END RSA PRIVATE KEY-----"
	long := "AKIA" + randomChars(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 24)
	return []secretForm{
		{1, plantedSecret{"\\/-escaped AWS secret", aws, strings.ReplaceAll(aws, "/", "\n")},
			`{"aws_secret_access_key": "` + strings.ReplaceAll(aws, "/", `\/`) + `"}`},
		{2, plantedSecret{"\\u-escaped Anthropic key", "sk-ant-api03-" + ant, ant},
			`{"anthropic": "sk\u002dant\u002dapi03\u002d` + ant + `"}`},
		{3, plantedSecret{"secret-named JSON member", pw, pw}, `{"host": "db", "db_password": "` + pw + `"}`},
		{4, plantedSecret{"*_CREDENTIAL assignment", cred, cred}, "SERVICE_CREDENTIAL=" + cred},
		{5, plantedSecret{"base64 of a GitHub token", gh, gh[4:] + "\n" + gh64}, "token_b64: " + gh64},
		{6, plantedSecret{"PEM key in JSON", pem, strings.Join(pemLines, "\n")},
			`{"private_key": "` + strings.ReplaceAll(pem, "\n", `\n`) + `"}`},
		{7, plantedSecret{"AWS key id of non-standard length", long, long[4:]}, "key id " + long},
	}
}

// Planted secrets in each of the seven forms, written by the model and
// printed by tools in a recorded session, reach none of the trajectory,
// the blobs, the HTML report, the Parquet export (read back by DuckDB),
// the OTLP file, or the terminal.
func TestSecretsInEveryFormReachNoOutput(t *testing.T) {
	forms := plantForms(t)
	var secrets []plantedSecret
	ws, runs, outside := t.TempDir(), t.TempDir(), t.TempDir()
	var reply []string
	var script strings.Builder
	script.WriteString("model: mock-1\nturns:\n  - content:\n")
	for _, f := range forms {
		secrets = append(secrets, f.plantedSecret)
		name := fmt.Sprintf("form%d.txt", f.form)
		plantFile(t, filepath.Join(ws, name), f.text+"\n")
		fmt.Fprintf(&script, "      - tool_use: {id: toolu_%d, name: bash, input: {command: %q}}\n", f.form, "cat "+name)
		reply = append(reply, f.text)
	}
	// The model repeats every form in its answer.
	fmt.Fprintf(&script, "  - content:\n      - text: %q\n", "Found these:\n"+strings.Join(reply, "\n"))
	scriptPath := filepath.Join(outside, "script.yaml")
	plantFile(t, scriptPath, script.String())
	cfg := filepath.Join(outside, "retrace.yaml")
	plantFile(t, cfg, "permissions:\n  mode: bypass\n")

	var terminal strings.Builder
	cli := func(args ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, nil, args...)
		terminal.WriteString(stdout + stderr)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
	}
	cli("run", "--script", scriptPath, "--config", cfg, "--workspace", ws, "--runs", runs, "--headless", "Find the settings")
	exports := t.TempDir()
	html, otlpFile, parquet := filepath.Join(exports, "report.html"), filepath.Join(exports, "traces.json"), filepath.Join(exports, "parquet")
	cli("report", runs, "-o", html)
	cli("export", runs, "--otlp-file", otlpFile)
	cli("export", runs, "--parquet", parquet)
	cli("detect", runs)

	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("trajectories %v, %v", files, err)
	}
	traj, _ := os.ReadFile(files[0])
	// Every form was read and recognised: otherwise the absence of the
	// secrets would prove nothing.
	for _, marker := range []string{"[REDACTED:anthropic]", "[REDACTED:secret_field]", "[REDACTED:secret_assignment]", "[REDACTED:base64]", "[REDACTED:private_key]", "[REDACTED:aws_access_key]"} {
		if c := strings.Count(string(traj), marker); c < 2 {
			t.Errorf("the trajectory has %d %s, want one in the tool output and one in the reply", c, marker)
		}
	}
	if c := strings.Count(string(traj), "[REDACTED:"); c < 2*len(forms) {
		t.Errorf("the trajectory has %d redactions, want at least %d", c, 2*len(forms))
	}

	// Every file under the runs directory and the exports.
	for _, root := range []string{runs, exports} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".parquet") {
				return err
			}
			data, err := os.ReadFile(p)
			for _, l := range leaks(p, string(data), secrets) {
				t.Error(l)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The Parquet files are compressed: DuckDB reads them back as text.
	for _, l := range leaks("the Parquet export", parquetText(t, parquet), secrets) {
		t.Error(l)
	}
	for _, l := range leaks("the terminal", terminal.String(), secrets) {
		t.Error(l)
	}
}

// parquetText returns every value of every Parquet file under dir, read by
// DuckDB and cast to text, one row a line.
func parquetText(t *testing.T, dir string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	glob := strings.ReplaceAll(filepath.Join(dir, "**", "*.parquet"), "'", "''")
	rows, err := db.Query("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM read_parquet('" + glob + "', union_by_name = true)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	n := 0
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			b.WriteString(v.String)
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 || !strings.Contains(b.String(), "[REDACTED:") {
		t.Fatalf("the Parquet export has %d rows and no redaction marker: it holds none of the session's text", n)
	}
	return b.String()
}
