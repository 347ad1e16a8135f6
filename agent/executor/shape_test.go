package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/recorder"
)

// shapeKey is a fake Anthropic key, long enough that any cut leaves
// recognisable pieces on both sides.
const shapeKey = "sk-ant-api03-Qz8Lw3Nv6Rt1Ks9Xc4Bm7Dj2Fh5Gp0Ty8Ue3Wi6Oa1Sd4Zx7Cv2Bn5Mk9Lj-AbCdEf"

// pieces returns every 8-byte window of the random part of a secret: if
// one of them is in a text, a piece of the secret leaked.
func pieces(secret string, skip int) []string {
	var ps []string
	for i := skip; i+8 <= len(secret); i++ {
		ps = append(ps, secret[i:i+8])
	}
	return ps
}

func TestASecretAcrossTheTruncationCutIsRedactedBeforeTheCut(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(cat:*)"}}})
	// The bash limit is 30000 characters and the head keeps 70 % of it:
	// the key starts 20 characters before the cut.
	limit := 30000
	head := limit * 7 / 10
	text := strings.Repeat("x", head-21) + " " + shapeKey + "\n" + strings.Repeat("y\n", 20000)
	if err := os.WriteFile(filepath.Join(h.ws, "big.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res := h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"cat big.txt"}`))
	evs := h.events()
	end := endOf(t, evs, "toolu_1")
	if !end.Truncated || end.Spill == "" {
		t.Fatalf("tool_end = %+v, want a truncated, spilled output", end)
	}
	spill, err := h.ex.cfg.Blobs.(*recorder.Blobs).Get(end.Spill)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res[0].Content, "[REDACTED:anthropic]") {
		t.Errorf("the model's text lacks the redaction marker at the cut: %q", res[0].Content[head-40:head+40])
	}
	for where, got := range map[string]string{"the model's text": res[0].Content, "the trajectory": h.buf.String(), "the spill": string(spill)} {
		for _, p := range pieces(shapeKey, len("sk-ant-api03-")) {
			if strings.Contains(got, p) {
				t.Errorf("%s holds %q, a piece of the key", where, p)
				break
			}
		}
	}
}

func TestAnOutputThatFitsOnceRedactedIsNotTruncated(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(cat:*)"}}})
	// Twenty private key blocks are over the limit; redacted, they are a
	// few hundred characters.
	block := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIEowIBAAKCAQEAq7vLm2Np9Rt4Kw8Zs1Bc6Df3Gh5\n", 40) + "-----END RSA PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(h.ws, "keys.txt"), []byte(strings.Repeat(block, 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	res := h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"cat keys.txt"}`))
	end := endOf(t, h.events(), "toolu_1")
	if end.Truncated || strings.Contains(res[0].Content, "MIIEow") || strings.Count(res[0].Content, "[REDACTED:private_key]") != 20 {
		t.Fatalf("tool_end %+v, text %.300s; want the 20 redacted blocks whole", end, res[0].Content)
	}
}

func TestTheCommandInASnapshotManifestIsRedactedBeforeItIsShortened(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(echo:*)"}}})
	// The summary is cut at 200 bytes; the key straddles the cut.
	cmd := "echo " + strings.Repeat("a", 180) + " " + shapeKey + " > out.txt"
	os.WriteFile(filepath.Join(h.ws, "out.txt"), []byte("before\n"), 0o644)
	h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"`+cmd+`"}`))
	end := endOf(t, h.events(), "toolu_1")
	if end.Snapshot == "" {
		t.Fatalf("tool_end %+v has no snapshot", end)
	}
	manifest, err := h.ex.cfg.Blobs.(*recorder.Blobs).Get(end.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), "[REDACTED:") {
		t.Errorf("the manifest's summary lacks the redaction marker: %s", manifest)
	}
	for _, p := range pieces(shapeKey, len("sk-ant-api03-")) {
		if strings.Contains(string(manifest), p) || strings.Contains(h.buf.String(), p) {
			t.Fatalf("a piece of the key (%q) is in the manifest or the trajectory: %s", p, manifest)
		}
	}
}

func TestAFileWithASecretIsNotSavedBeforeAWriteButListedAsSecret(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(echo:*)"}}})
	os.WriteFile(filepath.Join(h.ws, "settings.txt"), []byte("api key "+shapeKey+"\n"), 0o644)
	h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"echo changed > settings.txt"}`))
	end := endOf(t, h.events(), "toolu_1")
	manifest, err := h.ex.cfg.Blobs.(*recorder.Blobs).Get(end.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), `"existed":true,"skipped":"secret"`) || strings.Contains(string(manifest), `"blob"`) {
		t.Fatalf("manifest %s; want settings.txt listed as a skipped secret without a blob", manifest)
	}
}
