package executor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzToolInput sends arbitrary model-written input to every built-in but
// bash (which could run for minutes) through the whole pipeline: it must
// never panic, must give exactly one result, and the session must keep
// every trajectory invariant.
// Input that is not a JSON object arrives as partial_input, as the
// provider layer records a tool_use whose input does not parse.
func FuzzToolInput(f *testing.F) {
	for _, in := range []string{`{}`, `{"file_path":"a.txt"}`, `{"file_path":123}`, `{"pattern":"(("}`, `{"todos":[{}]}`,
		`{"query":"select:read"}`, `[]`, `null`, `{"file_path":"../../etc/passwd"}`, `{"pattern":"**/*"}`, "\x00"} {
		for i := range 8 {
			f.Add(uint8(i), in)
		}
	}
	names := []string{"read", "write", "edit", "grep", "glob", "ls", "todo_write", "tool_search"}
	f.Fuzz(func(t *testing.T, which uint8, input string) {
		h := newHarness(t, harnessOpts{})
		os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("hello\n"), 0o644)
		name := names[int(which)%len(names)]
		block := use("toolu_1", name, input)
		switch {
		case input == "":
			block.Input = []byte(`{}`) // a tool_use streamed without any input
		case !isObject(block.Input):
			// What a provider hands on when the model's input does not parse.
			block.Input, block.PartialInput = nil, input
		}
		res := h.turnWith(context.Background(), block)
		if len(res) != 1 || res[0].Content == "" {
			t.Fatalf("result %+v", res)
		}
		h.events()
	})
}
