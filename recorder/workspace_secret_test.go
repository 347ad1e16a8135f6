package recorder

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretFileNameTellsCredentialFilesFromLookAlikes(t *testing.T) {
	tests := []struct {
		name string
		file string
		want bool
	}{
		{"a .env file holds secrets", ".env", true},
		{"a .env variant holds secrets", ".env.local", true},
		{"a direnv file holds secrets", ".envrc", true},
		{"a .env example is a template", ".env.example", false},
		{"a .env sample is a template", ".env.sample", false},
		{"a .env template is a template", ".env.template", false},
		{"a PEM file holds keys", "server.pem", true},
		{"a .key file holds a key", "tls.key", true},
		{"a PKCS#12 store holds keys", "cert.p12", true},
		{"a PFX store holds keys", "cert.pfx", true},
		{"a Java keystore holds keys", "release.keystore", true},
		{"an SSH private key holds a key", "id_rsa", true},
		{"an ed25519 private key holds a key", "id_ed25519", true},
		{"an SSH public key is public", "id_ed25519.pub", false},
		{"a Go file named after ids is code", "id_test.go", false},
		{"an .npmrc may hold a registry token", ".npmrc", true},
		{"a .pypirc may hold an upload token", ".pypirc", true},
		{"a .netrc holds passwords", ".netrc", true},
		{"git's credential store holds passwords", ".git-credentials", true},
		{"an AWS credentials file holds keys", "credentials", true},
		{"a Go file about credentials is code", "credentials.go", false},
		{"a README is not a secret", "README.md", false},
		{"a file that merely mentions env is not a secret", "environment.go", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pat, got := SecretFileName(tt.file)
			if got != tt.want {
				t.Fatalf("SecretFileName(%q) = %q, %v; want %v", tt.file, pat, got, tt.want)
			}
			if got && pat == "" {
				t.Error("a match names no pattern")
			}
		})
	}
}

func TestSnapshotLeavesOutSecretFilesAndSaysWhy(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	writeTree(t, ws, map[string]string{
		"README.md":           "# project\n",
		".env":                "ANTHROPIC_API_KEY=" + fakeAnthropicKey + "\n",
		".env.example":        "ANTHROPIC_API_KEY=\n",
		"deploy/server.pem":   fakePrivateKey,
		"keys/id_ed25519":     "not even a key, but the name says it is\n",
		"keys/id_ed25519.pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKE alice@example.com\n",
		".aws/config":         "[default]\nregion = eu-west-1\n",
		"config/settings.go":  "package config\n\nconst awsKey = \"" + fakeAWSKeyID + "\"\n",
		"src/main.go":         "package main\n",
	})
	ref, rep, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, blobs, ref)
	byPath := map[string]ManifestEntry{}
	for _, e := range m.Entries {
		byPath[e.Path] = e
	}
	wantSecret := map[string]string{
		".env":               "the name matches .env*",
		"deploy/server.pem":  "the name matches *.pem",
		"keys/id_ed25519":    "the name matches id_ed25519*",
		".aws":               "a credential directory (.aws)",
		"config/settings.go": "it holds a secret the redactor recognises as aws_access_key",
	}
	for p, reason := range wantSecret {
		e, ok := byPath[p]
		switch {
		case !ok:
			t.Errorf("%s is not in the manifest; a skipped file must be listed", p)
		case e.Skipped != SkippedSecret || e.Reason != reason:
			t.Errorf("%s: skipped %q, reason %q; want %q, %q", p, e.Skipped, e.Reason, SkippedSecret, reason)
		case e.Blob != "":
			t.Errorf("%s has a blob %s; a secret file's content must not be stored", p, e.Blob)
		}
		if !strings.Contains(strings.Join(rep.Skipped, " "), p) {
			t.Errorf("the report's Skipped lacks %s: %v", p, rep.Skipped)
		}
	}
	if byPath[".env"].Size == 0 || byPath[".env"].Mode == 0 {
		t.Errorf("a skipped file keeps its size and mode: %+v", byPath[".env"])
	}
	for _, p := range []string{"README.md", ".env.example", "keys/id_ed25519.pub", "src/main.go"} {
		if e := byPath[p]; e.Skipped != "" || e.Blob == "" {
			t.Errorf("%s should be stored: %+v", p, e)
		}
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "5 entr(ies) that hold or look like secrets") {
		t.Errorf("warnings %q; want one naming the 5 secret entries", rep.Warnings)
	}
	// No stored byte holds a secret, and restoring leaves the secret
	// files out rather than restoring something else in their place.
	filepath.WalkDir(blobs.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, secret := range []string{fakeAnthropicKey, fakeKeyLine1, fakeAWSKeyID, "not even a key"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("blob %s holds %q", p, secret)
			}
		}
		return nil
	})
	dst := filepath.Join(t.TempDir(), "restored")
	if err := RestoreWorkspace(blobs, ref, dst); err != nil {
		t.Fatal(err)
	}
	for p := range wantSecret {
		if _, err := os.Lstat(filepath.Join(dst, p)); err == nil {
			t.Errorf("the restore created %s, which was not captured", p)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dst, ".env.example")); err != nil || string(data) != "ANTHROPIC_API_KEY=\n" {
		t.Errorf("restored .env.example = %q, %v", data, err)
	}
}

func TestAnEnvTemplateWithARealKeyIsLeftOutToo(t *testing.T) {
	ws, blobs := t.TempDir(), OpenBlobs(t.TempDir())
	writeTree(t, ws, map[string]string{".env.example": "GITHUB_TOKEN=ghp_" + fakeAlnum(36) + "\n"})
	ref, _, err := SnapshotWorkspace(ws, blobs, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := manifestOf(t, blobs, ref)
	if len(m.Entries) != 1 || m.Entries[0].Skipped != SkippedSecret || !strings.Contains(m.Entries[0].Reason, "github") {
		t.Fatalf("entries %+v; want .env.example skipped as holding a github secret", m.Entries)
	}
}
