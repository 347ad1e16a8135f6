package trajectory

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The committed JSON Schema and the Go decoder are two descriptions of one
// contract; these tests keep them from drifting apart (seed §13.11).

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
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
	if err := c.AddResource("v1.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eachLine(t *testing.T, path string, f func(n int, line []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		f(n, sc.Bytes())
	}
}

func TestValidFixturesConformToTheCommittedSchema(t *testing.T) {
	s := compiledSchema(t)
	files, _ := filepath.Glob("testdata/valid/*.jsonl")
	for _, path := range files {
		eachLine(t, path, func(n int, line []byte) {
			if path == "testdata/valid/torn_last_line.jsonl" && n == 11 {
				return // the torn line is meant to be broken
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s:%d: the decoder accepts this line but the schema rejects it: %v", path, n, err)
			}
		})
	}
}

func TestTheSchemaRejectsWhatTheDecoderRejectsForContractReasons(t *testing.T) {
	s := compiledSchema(t)
	// Lines that break the contract in ways a JSON Schema can express.
	for _, fixture := range []struct {
		file string
		line int
	}{
		{"unknown_version", 1}, {"unknown_event_type", 5}, {"unknown_failure_kind", 6},
		{"unknown_field", 7}, {"missing_seq", 4},
	} {
		path := filepath.Join("testdata", "invalid", fixture.file+".jsonl")
		eachLine(t, path, func(n int, line []byte) {
			if n != fixture.line {
				return
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			if s.Validate(v) == nil {
				t.Errorf("%s:%d: the decoder rejects this line but the schema accepts it", path, n)
			}
		})
	}
}
