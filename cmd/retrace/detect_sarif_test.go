package main

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/retrace-dev/retrace/detectors"
)

// sarifSchema compiles the official SARIF 2.1.0 JSON schema (OASIS,
// vendored in testdata), asserting formats such as uri-reference.
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sarifView is the part of a SARIF log the test reads: the rules and
// each result's rule and first location.
type sarifView struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID string `json:"id"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex int    `json:"ruleIndex"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region *struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

func TestDetectSARIFValidatesAgainstTheOfficialSchema(t *testing.T) {
	schema := sarifSchema(t)
	dir := t.TempDir()
	ids, err := filepath.Glob(filepath.Join(detectFixtures, "fire", "*.jsonl"))
	if err != nil || len(ids) < 10 {
		t.Fatalf("fixtures: %v, %v", ids, err)
	}
	// A detector judged over a corpus (its other sessions in
	// corpus/<id>) does not fire on its must-fire file alone.
	ids = slices.DeleteFunc(ids, func(f string) bool {
		_, err := os.Stat(filepath.Join(detectFixtures, "corpus", strings.TrimSuffix(filepath.Base(f), ".jsonl")))
		return err == nil
	})
	for _, f := range ids {
		copyFixture(t, dir, "fire", strings.TrimSuffix(filepath.Base(f), ".jsonl"))
	}
	corpusIDs := map[string]bool{}
	for _, d := range detectors.Catalog() {
		corpusIDs[d.Info().ID] = d.Info().Corpus
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	clean := copyFixture(t, t.TempDir(), "clean", "lost_call")
	for _, tc := range []struct {
		name    string
		args    []string
		results int
	}{
		{"Every must-fire fixture, as relative paths, gives one result each.", []string{"detect", rel, "--format", "sarif", "--fail-on", "never"}, len(ids)},
		{"Absolute paths become file URIs.", []string{"detect", dir, "--format", "sarif", "--fail-on", "never"}, len(ids)},
		{"A clean session is a run with no results.", []string{"detect", clean, "--format", "sarif"}, 0},
		{"--list as SARIF is the rules alone.", []string{"detect", "--list", "--format", "sarif"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Fatalf("invalid SARIF: %v", err)
			}
			var log sarifView
			if err := json.Unmarshal([]byte(stdout), &log); err != nil {
				t.Fatal(err)
			}
			run := log.Runs[0]
			// The detectors that judge a corpus (dead_defense,
			// denominator_shift, ...) are counted apart: next to each
			// other the must-fire fixtures make one corpus, whose
			// findings may be located in another fixture than their
			// own. A fixture may also hold a second, true finding of
			// another detector (the empty-input retries' reminders
			// over the cap; the pending tool's call not offered), so
			// the fixtures with a result are counted, not the results.
			files, corpus := map[string]bool{}, 0
			for _, r := range run.Results {
				if corpusIDs[r.RuleID] {
					corpus++
				} else {
					files[strings.TrimPrefix(strings.TrimSuffix(path.Base(r.Locations[0].PhysicalLocation.ArtifactLocation.URI), ".jsonl"), "fire-")] = true
				}
			}
			want := 0
			if tc.results > 0 {
				for _, f := range ids {
					if id := strings.TrimSuffix(filepath.Base(f), ".jsonl"); !corpusIDs[id] {
						want++
						if !files[id] {
							t.Errorf("the must-fire fixture of %s has no result", id)
						}
					}
				}
			}
			if len(files) != want || (tc.results > 0) != (corpus > 0) || len(run.Tool.Driver.Rules) < 10 {
				t.Fatalf("%d fixtures with results (want %d) and %d results of corpus detectors, %d rules", len(files), want, corpus, len(run.Tool.Driver.Rules))
			}
			for _, r := range run.Results {
				loc := r.Locations[0].PhysicalLocation
				if loc.Region == nil || loc.Region.StartLine < 1 || !strings.HasSuffix(loc.ArtifactLocation.URI, ".jsonl") {
					t.Errorf("result %s is not located at a trajectory line: %+v", r.RuleID, loc)
				}
				if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
					t.Errorf("result %s points at rule %d", r.RuleID, r.RuleIndex)
				}
				if strings.HasPrefix(tc.name, "Absolute") != strings.HasPrefix(loc.ArtifactLocation.URI, "file:///") {
					t.Errorf("uri %s", loc.ArtifactLocation.URI)
				}
			}
		})
	}
	// The schema is strict enough to matter: a level SARIF does not know
	// is refused.
	bad := `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "retrace"}},
		"results": [{"ruleId": "x", "level": "fatal", "message": {"text": "m"}}]}]}`
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if schema.Validate(doc) == nil {
		t.Fatal("the schema accepted level fatal")
	}
}
