package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMetricsPrintsEveryNamedMetricByDefault(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "metrics", fixtures+"/valid")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, h := range []string{"== funnel ==", "== latency ==", "== failure_kinds ==", "== sessions =="} {
		if !strings.Contains(stdout, h) {
			t.Errorf("output lacks %q:\n%s", h, stdout)
		}
	}
	if !strings.Contains(stdout, "(all)  13     7          6         0") {
		t.Errorf("funnel total row missing or wrong:\n%s", stdout)
	}
}

func TestMetricsJSONIsOneDocumentKeyedByMetric(t *testing.T) {
	code, stdout, stderr := runCLI(t, map[string]string{"RETRACE_DIR": fixtures + "/valid"}, "metrics", "--metric", "funnel", "--format", "json")
	var doc map[string][]map[string]any
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	total := doc["funnel"][len(doc["funnel"])-1]
	if total["tool"] != "(all)" || total["calls"] != float64(13) || total["lost"] != float64(0) {
		t.Fatalf("funnel total %v, want 13 calls and none lost", total)
	}
}

func TestMetricsRejectsAnUnknownMetricNamingTheKnownOnes(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "metrics", fixtures+"/valid", "--metric", "nope")
	if code != ExitInvalid || !strings.Contains(stderr, "funnel") {
		t.Fatalf("exit %d, stderr %q; want 2 and the list of metrics", code, stderr)
	}
}
