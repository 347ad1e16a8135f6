package agent

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/tools"
)

func TestClassifyJudgesWritesFromTheCommandNotItsName(t *testing.T) {
	cases := []struct {
		name             string
		tool             tools.Tool
		input            string
		readOnly, writes bool
	}{
		{"A spinning type check counts errors without writing a file.", tools.BashTool{},
			`{"command":"bunx tsc --noEmit 2>&1 | grep -c \"error TS\""}`, false, false},
		{"A redirection into a file writes.", tools.BashTool{}, `{"command":"go vet ./... > /tmp/e.txt 2>&1"}`, false, true},
		{"Removing a file writes.", tools.BashTool{}, `{"command":"rm -f out.txt"}`, false, true},
		{"An in-place sed writes.", tools.BashTool{}, `{"command":"sed -i s/a/b/ f.txt"}`, false, true},
		{"A plain listing is read-only.", tools.BashTool{}, `{"command":"ls -la"}`, true, false},
		{"unlink of a path only known at run time writes, as the shell analysis says.", tools.BashTool{}, `{"command":"unlink $X"}`, false, true},
		{"shred of a path only known at run time writes.", tools.BashTool{}, `{"command":"shred $X"}`, false, true},
		{"A program's own output option writes.", tools.BashTool{}, `{"command":"curl -so out.json http://127.0.0.1:9/x"}`, false, true},
		{"sed w writes.", tools.BashTool{}, `{"command":"sed -n '1w out.txt' a.txt"}`, false, true},
		{"patch writes the files its input names.", tools.BashTool{}, `{"command":"patch -p1 < fix.diff"}`, false, true},
		{"A background count writes nothing.", tools.BashTool{}, `{"command":"grep -c x a.txt &"}`, false, false},
		{"The read tool is read-only.", tools.ReadTool{}, `{"file_path":"a"}`, true, false},
		{"The write tool writes.", tools.WriteTool{}, `{"file_path":"a","content":""}`, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ro, wr := classify(tc.tool, json.RawMessage(tc.input))
			if ro != tc.readOnly || wr != tc.writes {
				t.Errorf("read-only %v writes %v, want %v %v", ro, wr, tc.readOnly, tc.writes)
			}
		})
	}
}

func TestScalarOutputsAreJudgedByShape(t *testing.T) {
	for out, want := range map[string]bool{"139": true, "-3": true, "2.5": true, "87%": true,
		"139 errors": false, "src/a.ts:1: error": false, "": false, "1\n2": false} {
		if got := scalar.MatchString(out); got != want {
			t.Errorf("%q: scalar %v, want %v", out, got, want)
		}
	}
}

// TestClassifyAgreesWithTheShellAnalysisOnTheCorpus runs the shell
// package's corpus through the defense's classifier: a command the
// analysis lists a written path for, or one with a dynamic write target,
// is one that wrote, and a read-only one never did. There is no second
// list of writing programs to disagree with the analysis.
func TestClassifyAgreesWithTheShellAnalysisOnTheCorpus(t *testing.T) {
	f, err := os.Open("shell/testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for line := 1; sc.Scan(); line++ {
		var row struct {
			Cmd string `json:"cmd"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("corpus.jsonl:%d: %v", line, err)
		}
		in, _ := json.Marshal(map[string]string{"command": row.Cmd})
		ro, wr := classify(tools.BashTool{}, in)
		a := shell.Analyze(row.Cmd)
		switch {
		case ro != a.ReadOnly:
			t.Errorf("corpus.jsonl:%d %q: read-only %v, the analysis says %v", line, row.Cmd, ro, a.ReadOnly)
		case ro && wr:
			t.Errorf("corpus.jsonl:%d %q: read-only and writing", line, row.Cmd)
		case len(a.Writes) > 0 && !wr:
			t.Errorf("corpus.jsonl:%d %q: the analysis lists writes %q, the defense says it wrote nothing", line, row.Cmd, a.Writes)
		}
		n++
	}
	if n < 300 {
		t.Fatalf("read %d corpus rows; the corpus has more", n)
	}
}
