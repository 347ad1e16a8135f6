package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// expectedSpec is what each built-in tool must declare. The table is
// checked against Builtins both ways: a new tool that is not
// in the table fails, and so does a row whose tool is gone, so forgetting
// to decide a tool's display mode or limit is a red test, not silent drift.
type expectedSpec struct {
	name        string
	readOnly    bool
	sample      string // an input to ask ConcurrencySafe about
	safe        bool   // ConcurrencySafe(sample)
	display     trajectory.DisplayMode
	resultLimit int
	deferred    bool
	interrupt   Interrupt
	emptyOutput string
	pathTool    bool
	commandTool bool
}

var expectedSpecs = []expectedSpec{
	{"read", true, `{"file_path":"a.go"}`, true, trajectory.DisplayFull, 0, false, InterruptCancel, "(the tool succeeded with no output)", true, false},
	{"write", false, `{"file_path":"a.go","content":"x"}`, false, trajectory.DisplayFull, 0, false, InterruptBlock, "(the file was written)", true, false},
	{"edit", false, `{"file_path":"a.go","old_string":"a","new_string":"b"}`, false, trajectory.DisplayFull, 0, false, InterruptBlock, "(the file was edited)", true, false},
	{"grep", true, `{"pattern":"x"}`, true, trajectory.DisplayFull, 30000, false, InterruptCancel, "(no matches)", true, false},
	{"glob", true, `{"pattern":"**/*.go"}`, true, trajectory.DisplayFull, 30000, false, InterruptCancel, "(no files matched)", true, false},
	{"ls", true, `{}`, true, trajectory.DisplayFull, 30000, false, InterruptCancel, "(empty directory)", true, false},
	{"bash", false, `{"command":"ls -la && wc -l *.go"}`, true, trajectory.DisplayFull, 30000, false, InterruptCancel, "(command succeeded with no output)", false, true},
	{"todo_write", true, `{"todos":[]}`, false, trajectory.DisplayHidden, 0, false, InterruptCancel, "(the tool succeeded with no output)", false, false},
	{"tool_search", true, `{"query":"select:read"}`, true, trajectory.DisplayHidden, 0, false, InterruptCancel, "(the tool succeeded with no output)", false, false},
}

func TestBuiltinDeclarationsMatchTheExpectedTableBothWays(t *testing.T) {
	want := map[string]expectedSpec{}
	for _, e := range expectedSpecs {
		want[e.name] = e
	}
	got := map[string]bool{}
	for _, tool := range Builtins() {
		s := tool.Spec()
		got[s.Name] = true
		e, ok := want[s.Name]
		if !ok {
			t.Errorf("built-in tool %q has no row in expectedSpecs: decide its declarations and add one", s.Name)
			continue
		}
		if s.ReadOnly != e.readOnly {
			t.Errorf("%s: ReadOnly = %v, want %v", s.Name, s.ReadOnly, e.readOnly)
		}
		if safe := tool.ConcurrencySafe(json.RawMessage(e.sample)); safe != e.safe {
			t.Errorf("%s: ConcurrencySafe(%s) = %v, want %v", s.Name, e.sample, safe, e.safe)
		}
		if s.Display != e.display {
			t.Errorf("%s: Display = %q, want %q", s.Name, s.Display, e.display)
		}
		if !s.Display.Valid() {
			t.Errorf("%s: Display %q is not a trajectory display mode", s.Name, s.Display)
		}
		if s.ResultLimit != e.resultLimit {
			t.Errorf("%s: ResultLimit = %d, want %d", s.Name, s.ResultLimit, e.resultLimit)
		}
		if s.Deferred != e.deferred {
			t.Errorf("%s: Deferred = %v, want %v", s.Name, s.Deferred, e.deferred)
		}
		if s.Interrupt != e.interrupt {
			t.Errorf("%s: Interrupt = %v, want %v", s.Name, s.Interrupt, e.interrupt)
		}
		if s.EmptyOutput != e.emptyOutput {
			t.Errorf("%s: EmptyOutput = %q, want %q", s.Name, s.EmptyOutput, e.emptyOutput)
		}
		if s.Source != trajectory.ToolBuiltin {
			t.Errorf("%s: Source = %q, want builtin", s.Name, s.Source)
		}
		if _, ok := tool.(PathTool); ok != e.pathTool {
			t.Errorf("%s: implements PathTool = %v, want %v", s.Name, ok, e.pathTool)
		}
		if _, ok := tool.(CommandTool); ok != e.commandTool {
			t.Errorf("%s: implements CommandTool = %v, want %v", s.Name, ok, e.commandTool)
		}
	}
	for _, e := range expectedSpecs {
		if !got[e.name] {
			t.Errorf("expectedSpecs has a row for %q but Builtins has no such tool: drop the row or restore the tool", e.name)
		}
	}
}

func TestBuiltinsComeInTheirFixedOrder(t *testing.T) {
	var names []string
	for _, tool := range Builtins() {
		names = append(names, tool.Spec().Name)
	}
	want := "read,write,edit,grep,glob,ls,bash,todo_write,tool_search"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("Builtins order = %s, want %s", got, want)
	}
}

func TestSpecIsTheSameValueOnEveryCall(t *testing.T) {
	for _, tool := range Builtins() {
		a, b := tool.Spec(), tool.Spec()
		if !bytes.Equal(a.Schema, b.Schema) || a.Description != b.Description || a.Name != b.Name {
			t.Errorf("%s: Spec changed between calls", a.Name)
		}
		if !bytes.Equal(Definition(tool), Definition(tool)) {
			t.Errorf("%s: Definition bytes changed between calls", a.Name)
		}
	}
}

func TestDescriptionsAreWithinTheUsefulLength(t *testing.T) {
	// Too short and the model does not know the tool's limits; too long and
	// the attention is diluted while every turn resends it.
	for _, tool := range Builtins() {
		s := tool.Spec()
		if n := len(s.Description); n < 100 || n > 700 {
			t.Errorf("%s: description is %d bytes, want 100 to 700", s.Name, n)
		}
	}
}

func TestDefinitionHasNameDescriptionAndSchemaInThatOrder(t *testing.T) {
	for _, tool := range Builtins() {
		def := Definition(tool)
		if !json.Valid(def) {
			t.Fatalf("%s: definition is not valid JSON: %s", tool.Spec().Name, def)
		}
		dec := json.NewDecoder(bytes.NewReader(def))
		var keys []string
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Join(keys, ","); got != "name,description,input_schema" {
			t.Errorf("%s: definition keys = %s, want name,description,input_schema", tool.Spec().Name, got)
		}
		if bytes.Contains(def, []byte("$schema")) || bytes.Contains(def, []byte("$id")) || bytes.Contains(def, []byte("$ref")) {
			t.Errorf("%s: definition still has $schema, $id or $ref: %s", tool.Spec().Name, def)
		}
	}
}

func TestDefinitionOfABrokenSchemaIsStillValidJSON(t *testing.T) {
	def := Definition(fakeTool{spec: Spec{Name: "broken", Description: `says "<hi>" & more`, Schema: json.RawMessage(`{not json`)}})
	want := `{"name":"broken","description":"says \"<hi>\" & more","input_schema":{"type":"object"}}`
	if string(def) != want {
		t.Errorf("Definition = %s, want %s", def, want)
	}
}

// schemaCase is one input checked against a built-in tool's schema.
type schemaCase struct {
	tool  string
	input string
	valid bool
}

func TestEveryBuiltinSchemaCompilesAndRejectsWrongInput(t *testing.T) {
	cases := map[string]schemaCase{
		"read accepts a path with an offset":                     {"read", `{"file_path":"a.go","offset":3}`, true},
		"read rejects a number as file_path":                     {"read", `{"file_path":12}`, false},
		"read rejects a missing file_path":                       {"read", `{}`, false},
		"read rejects an offset of zero":                         {"read", `{"file_path":"a","offset":0}`, false},
		"read rejects a field it does not know":                  {"read", `{"file_path":"a","path":"b"}`, false},
		"write rejects content given as an array":                {"write", `{"file_path":"a","content":["x"]}`, false},
		"write rejects a missing content":                        {"write", `{"file_path":"a"}`, false},
		"edit rejects replace_all given as a string":             {"edit", `{"file_path":"a","old_string":"x","new_string":"y","replace_all":"yes"}`, false},
		"edit accepts an exact replacement":                      {"edit", `{"file_path":"a","old_string":"x","new_string":"y"}`, true},
		"grep rejects an unknown output mode":                    {"grep", `{"pattern":"x","output_mode":"lines"}`, false},
		"grep rejects a pattern given as a number":               {"grep", `{"pattern":5}`, false},
		"grep accepts content mode with context":                 {"grep", `{"pattern":"x","output_mode":"content","context":2}`, true},
		"glob rejects a missing pattern":                         {"glob", `{"path":"src"}`, false},
		"ls accepts no input at all":                             {"ls", `{}`, true},
		"ls rejects a path given as a boolean":                   {"ls", `{"path":true}`, false},
		"bash rejects a command given as a list":                 {"bash", `{"command":["ls"]}`, false},
		"bash rejects a timeout above ten minutes":               {"bash", `{"command":"ls","timeout":600001}`, false},
		"bash accepts a command with a timeout and description":  {"bash", `{"command":"ls","timeout":1000,"description":"List files"}`, true},
		"todo_write rejects an unknown status":                   {"todo_write", `{"todos":[{"content":"a","status":"doing","active_form":"A"}]}`, false},
		"todo_write rejects a todo without active_form":          {"todo_write", `{"todos":[{"content":"a","status":"pending"}]}`, false},
		"todo_write accepts a list of one pending todo":          {"todo_write", `{"todos":[{"content":"a","status":"pending","active_form":"A"}]}`, true},
		"todo_write rejects todos given as an object":            {"todo_write", `{"todos":{}}`, false},
		"tool_search rejects a query given as a number":          {"tool_search", `{"query":1}`, false},
		"tool_search rejects max_results of zero":                {"tool_search", `{"query":"x","max_results":0}`, false},
		"tool_search accepts a select query with a result count": {"tool_search", `{"query":"select:read","max_results":3}`, true},
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range Builtins() {
		s := tool.Spec()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Schema))
		if err != nil {
			t.Fatalf("%s: schema is not JSON: %v", s.Name, err)
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + s.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s: schema does not compile: %v", s.Name, err)
		}
		schemas[s.Name] = sch
	}
	covered := map[string]bool{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			covered[tc.tool] = true
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			err = schemas[tc.tool].Validate(inst)
			if tc.valid && err != nil {
				t.Errorf("%s rejected %s: %v", tc.tool, tc.input, err)
			}
			if !tc.valid && err == nil {
				t.Errorf("%s accepted %s", tc.tool, tc.input)
			}
		})
	}
	for name := range schemas {
		if !covered[name] {
			t.Errorf("no schema case for %s: add one that a wrong type must fail", name)
		}
	}
}

func TestDecodeIsStrict(t *testing.T) {
	cases := map[string]string{
		"an unknown field is refused":            `{"file_path":"a","bogus":1}`,
		"a second JSON value after the object":   `{"file_path":"a"} {}`,
		"a whole number written with a fraction": `{"file_path":"a","offset":2.0}`,
		"a string where a number belongs":        `{"file_path":"a","offset":"2"}`,
		"something that is not JSON at all":      `file_path=a`,
		"an array instead of an object":          `["a"]`,
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decode[readInput](json.RawMessage(input)); err == nil {
				t.Errorf("decode accepted %s", input)
			}
		})
	}
	if in, err := decode[readInput](json.RawMessage(`{"file_path":"a","offset":2}`)); err != nil || in.Offset != 2 {
		t.Errorf("decode of a valid input = %+v, %v", in, err)
	}
}
