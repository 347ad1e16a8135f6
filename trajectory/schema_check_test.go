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
// contract; these tests keep them from drifting apart.

func compiledSchema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(path)
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
	name := filepath.Base(path)
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
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
	v1, v2 := compiledSchema(t, v1SchemaPath), compiledSchema(t, schemaPath)
	v1Files, _ := filepath.Glob("testdata/valid/*.jsonl")
	v2Files, _ := filepath.Glob("testdata/v2/*.jsonl")
	if len(v1Files) == 0 || len(v2Files) == 0 {
		t.Fatal("want fixtures of both versions")
	}
	for _, path := range append(v1Files, v2Files...) {
		s := v1
		if filepath.Dir(path) == "testdata/v2" {
			s = v2
		}
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
	s := compiledSchema(t, v1SchemaPath) // the invalid fixtures are v 1 files
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
