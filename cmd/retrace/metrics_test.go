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
	if !strings.Contains(stdout, "│ (all) │    13 │      2 │   9 │         7 │        6 │    0 │") {
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
	total := doc["funnel"][0]
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

func TestMetricsLimitsLongTablesButNeverMachineOutput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		wantLines int
		wantNote  bool
	}{
		{"A table of seven sessions cut at two says five are not shown.",
			[]string{"--limit", "2"}, 2, true},
		{"--limit 0 shows every session.", []string{"--limit", "0"}, 7, false},
		{"CSV has every session whatever the limit.", []string{"--limit", "2", "--format", "csv"}, 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"metrics", fixtures + "/valid", "--metric", "sessions"}, tc.args...)
			code, stdout, stderr := runCLI(t, nil, args...)
			if code != ExitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if got := strings.Count(stdout, "20261130-"); got != tc.wantLines {
				t.Errorf("%d session rows, want %d:\n%s", got, tc.wantLines, stdout)
			}
			if note := strings.Contains(stdout, "(5 rows not shown;"); note != tc.wantNote {
				t.Errorf("note shown = %v, want %v:\n%s", note, tc.wantNote, stdout)
			}
		})
	}
	if code, _, stderr := runCLI(t, nil, "metrics", fixtures+"/valid", "--limit", "-1"); code != ExitInvalid || !strings.Contains(stderr, "--limit") {
		t.Fatalf("exit %d, stderr %q; want 2 for a negative limit", code, stderr)
	}
}

func TestMetricsSQLPrintsTheQueryWithItsDenominator(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "metrics", "--metric", "funnel", "--sql")
	if code != ExitOK || !strings.HasPrefix(stdout, "-- funnel:") || !strings.Contains(stdout, "Denominator") || !strings.Contains(stdout, "FROM tool_calls") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}
