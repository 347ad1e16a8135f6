package executor

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

// TestPartitionAndStreamBatchTheCorpusAlike cuts the shell package's
// corpus into turns of one to seven bash calls, with a read and a write
// call of the file tools mixed in, decides each call's concurrency safety
// with the real tools' predicates, and checks that the executor's
// partition and the stream's batchOf give every call the same batch: the
// two schedulers follow one rule (joinsBatch).
func TestPartitionAndStreamBatchTheCorpusAlike(t *testing.T) {
	f, err := os.Open("../shell/testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []*call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var row struct {
			Cmd string `json:"cmd"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		in, _ := json.Marshal(map[string]string{"command": row.Cmd})
		calls = append(calls, &call{name: "bash", rawInput: in, safe: concurrencySafe(tools.BashTool{}, in)})
		switch len(calls) % 11 {
		case 3:
			in := json.RawMessage(`{"file_path":"a.go"}`)
			calls = append(calls, &call{name: "read", rawInput: in, safe: concurrencySafe(tools.ReadTool{}, in)})
		case 7:
			in := json.RawMessage(`{"file_path":"a.go","content":"x"}`)
			calls = append(calls, &call{name: "write", rawInput: in, safe: concurrencySafe(tools.WriteTool{}, in)})
		}
	}
	safe, turns := 0, 0
	for start, size := 0, 1; start < len(calls); start, size = start+size, size%7+1 {
		turn := calls[start:min(start+size, len(calls))]
		for i, c := range turn {
			c.index = i
			if c.safe {
				safe++
			}
		}
		turns++
		want := map[*call]int{}
		for bi, b := range partition(turn) {
			for _, c := range b.calls {
				want[c] = bi
			}
		}
		s := &Stream{}
		for _, c := range turn {
			if got := s.batchOf(c); got != want[c] {
				t.Errorf("turn %d call %d (%s %s, safe %v): the stream numbers batch %d, the partition %d", turns, c.index, c.name, c.rawInput, c.safe, got, want[c])
			}
		}
	}
	if safe == 0 || safe == len(calls) {
		t.Fatalf("%d of %d calls are concurrency-safe; the cross-check needs both kinds", safe, len(calls))
	}
}
