package compare

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// builtin returns the built-in rule called name.
func builtin(t *testing.T, name string, tempDirs ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, r := range Builtins(tempDirs...) {
		if r.Name == name {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no built-in rule %q", name)
	}
	return out
}

func apply(rules []Rule, s string) string {
	for _, r := range rules {
		s = r.Pattern.ReplaceAllString(s, r.Replace)
	}
	return s
}

func TestEachBuiltInRuleFiresOnWhatItCoversAndNotOnLookAlikes(t *testing.T) {
	tests := []struct {
		name, rule, in, want string
		tempDirs             []string
	}{
		{"an RFC 3339 time in UTC is a timestamp", "timestamp", "at 2026-12-01T20:05:21Z ok", "at <timestamp> ok", nil},
		{"an RFC 3339 time with fraction and offset is a timestamp", "timestamp", "2026-12-01T20:05:21.123456+01:00", "<timestamp>", nil},
		{"a space-separated log time is a timestamp", "timestamp", "2026-12-01 20:05:21,042 INFO", "<timestamp> INFO", nil},
		{"a date alone is not a timestamp", "timestamp", "released 2026-12-01", "released 2026-12-01", nil},
		{"a version with dashes is not a timestamp", "timestamp", "v1-2-3 12:30", "v1-2-3 12:30", nil},
		{"date(1) output in the C locale is a date", "date", "Tue Dec  1 20:05:21 UTC 2026\n", "<date>\n", nil},
		{"date(1) output with a two-digit day is a date", "date", "Sat Dec 12 09:00:00 CET 2026", "<date>", nil},
		{"an HTTP Date header is a date", "date", "Date: Tue, 01 Dec 2026 20:05:21 GMT", "Date: <date>", nil},
		{"a weekday in prose is not a date", "date", "on Tue Dec 1 we meet", "on Tue Dec 1 we meet", nil},
		{"ls -l's time of a recent file is a modification time", "ls_time", "-rw-r--r-- 1 root root 5 Dec  1 20:05 a.txt", "-rw-r--r-- 1 root root 5 <mtime> a.txt", nil},
		{"ls -l's year of an old file is a modification time", "ls_time", "-rw-r--r-- 1 root root 5 Jan  1  2020 a.txt", "-rw-r--r-- 1 root root 5 <mtime> a.txt", nil},
		{"a month and year in prose is not a modification time", "ls_time", "since May 12 2026", "since May 12 2026", nil},
		{"a month name inside a word is not a modification time", "ls_time", "XJan 12 10:30", "XJan 12 10:30", nil},
		{"milliseconds are a duration", "duration", "took 12.3ms", "took <duration>", nil},
		{"seconds of go test are a duration", "duration", "ok  \tpkg\t0.41s", "ok  \tpkg\t<duration>", nil},
		{"time(1)'s real line is a duration", "duration", "real\t0m0.012s", "real\t<duration>", nil},
		{"a Go duration with hours is a duration", "duration", "after 1h2m3.5s", "after <duration>", nil},
		{"a unit glued to a word is not a duration", "duration", "sha256sum 5sec 10msgs", "sha256sum 5sec 10msgs", nil},
		{"a path under /tmp is a temporary path", "temp_path", "wrote /tmp/go-build123/b001/x.o", "wrote <tmp>/b001/x.o", nil},
		{"a quoted path under /tmp keeps its quotes", "temp_path", `open "/tmp/retrace-replay-9/a.txt": no such file`, `open "<tmp>/a.txt": no such file`, nil},
		{"two files in one temporary directory stay apart", "temp_path", "/tmp/TestX123/001/a.txt /tmp/TestX123/001/b.txt", "<tmp>/001/a.txt <tmp>/001/b.txt", nil},
		{"/tmp itself is a temporary path", "temp_path", "cd /tmp && ls", "cd <tmp> && ls", nil},
		{"macOS's per-user temp directory is a temporary path", "temp_path", "/var/folders/xy/abc123/T/tmp.1/f", "<tmp>/f", nil},
		{"a directory named tmp elsewhere is not a temporary path", "temp_path", "/home/u/tmp/a and /tmpfiles/b", "/home/u/tmp/a and /tmpfiles/b", nil},
		{"a path under $TMPDIR is a temporary path", "temp_path", "saved to /scratch/t/run-1/out.txt", "saved to <tmp>/out.txt", []string{"/scratch/t/"}},
		{"a sibling of $TMPDIR is not a temporary path", "temp_path", "saved to /scratch/tx/out.txt", "saved to /scratch/tx/out.txt", []string{"/scratch/t"}},
		{"a UUID is an id", "uuid", "request 123e4567-e89b-12d3-a456-426614174000 done", "request <uuid> done", nil},
		{"a UUID without its dashes is not a UUID", "uuid", "123e4567e89b12d3a456426614174000", "123e4567e89b12d3a456426614174000", nil},
		{"a git commit id is a hex id", "hex_id", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8", "commit <hex>", nil},
		{"sixteen hex digits are a hex id", "hex_id", "trace=00f067aa0ba902b7", "trace=<hex>", nil},
		{"a short hex word is not a hex id", "hex_id", "commit 9fceb02 deadbeef", "commit 9fceb02 deadbeef", nil},
		{"mixed-case hex is not a hex id", "hex_id", "AbCdEf0123456789AbCd", "AbCdEf0123456789AbCd", nil},
		{"pid 4242 is a process id", "pid", "started worker pid 4242", "started worker pid <pid>", nil},
		{"PID=17 is a process id", "pid", "PID=17 exited", "PID=<pid> exited", nil},
		{"a shell's background job line is a process id", "pid", "[1] 31337\n", "[1] <pid>\n", nil},
		{"rapid 12 is not a process id", "pid", "rapid 12", "rapid 12", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apply(builtin(t, tc.rule, tc.tempDirs...), tc.in); got != tc.want {
				t.Fatalf("%s(%q) = %q, want %q", tc.rule, tc.in, got, tc.want)
			}
		})
	}
}

func TestDateOutputIsOneDateNotATimeAndAnMtimeAndIsCountedOncePerText(t *testing.T) {
	n := newNormalizer(Options{})
	got := n.text("Tue Dec  1 20:05:21 UTC 2026", ScopeToolOutput, "bash")
	if got != "<date>" {
		t.Fatalf("got %q", got)
	}
	n.text("Tue Dec  1 20:05:21 UTC 2026", ScopeToolOutput, "bash")
	if u := used(n, n.other()); len(u) != 1 || u[0] != (RuleUse{Rule: "date", Recorded: 1}) {
		t.Fatalf("uses %+v", u)
	}
}

func TestRulesApplyOnlyToTheirToolsAndScopes(t *testing.T) {
	bashOnly := Rule{Name: "r", Pattern: regexp.MustCompile(`x+`), Replace: "X", Tools: []string{"bash"}}
	outputOnly := Rule{Name: "r", Pattern: regexp.MustCompile(`x+`), Replace: "X", In: []Scope{ScopeToolOutput}}
	tests := []struct {
		name  string
		rule  Rule
		scope Scope
		tool  string
		want  string
	}{
		{"a rule for bash rewrites bash's output", bashOnly, ScopeToolOutput, "bash", "aXb"},
		{"a rule for bash leaves read's output alone", bashOnly, ScopeToolOutput, "read", "axxb"},
		{"a rule for bash rewrites bash's input", bashOnly, ScopeToolInput, "bash", "aXb"},
		{"a rule that names tools never rewrites model text", bashOnly, ScopeModelText, "", "axxb"},
		{"a rule for tool output rewrites any tool's output", outputOnly, ScopeToolOutput, "read", "aXb"},
		{"a rule for tool output leaves model text alone", outputOnly, ScopeModelText, "", "axxb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNormalizer(Options{NoDefaults: true, Rules: []Rule{tc.rule}})
			if got := n.text("axxb", tc.scope, tc.tool); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAUserRuleSeesTheTextBeforeTheBuiltInRules(t *testing.T) {
	r, err := ParseFlag("--normalize[1]", `took (\d+)ms=>took N ms`)
	if err != nil {
		t.Fatal(err)
	}
	n := newNormalizer(Options{Rules: []Rule{r}})
	if got := n.text("took 12ms", ScopeToolOutput, "bash"); got != "took N ms" {
		t.Fatalf("got %q: the built-in duration rule ran first", got)
	}
	if u := used(n, n.other()); len(u) != 1 || u[0].Rule != "--normalize[1]" {
		t.Fatalf("uses %+v", u)
	}
}

func TestRuleParsingErrors(t *testing.T) {
	tests := []struct {
		name, flag, want string
	}{
		{"a flag without => says how to write it", "took [0-9]+ms", `has no "=>"`},
		{"a pattern that does not compile says why", "a(b=>x", "missing closing )"},
		{"an empty pattern is refused", "=>x", "the pattern is empty"},
		{"a pattern matching the empty string is refused", "x*=>y", "matches the empty string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFlag("--normalize[1]", tc.flag)
			if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrRule containing %q", err, tc.want)
			}
		})
	}
	if _, err := ParseLevel("loose"); !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), "exact, exit_code, ignore") {
		t.Fatalf("ParseLevel: %v", err)
	}
	if _, err := NewRule("r", "x", "y", nil, []Scope{"stdout"}); !errors.Is(err, ErrRule) {
		t.Fatalf("NewRule with an unknown scope: %v", err)
	}
	r, err := ParseFlag("f", "a=>b=>c")
	if err != nil || r.Pattern.String() != "a=>b" || r.Replace != "c" {
		t.Fatalf("the last => separates: %+v %v", r, err)
	}
}

// bashOutput sets the output of basic.jsonl's one call, both as its
// tool_result and as the block the next request carries, and its outcome.
func bashOutput(evs []trajectory.Event, text string, failed bool) []trajectory.Event {
	for i, ev := range evs {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolResult:
			p.Text, p.IsError = text, failed
		case *trajectory.ModelRequest:
			for j := range p.NewMessages {
				for k := range p.NewMessages[j].Content {
					if b := &p.NewMessages[j].Content[k]; b.Type == trajectory.BlockToolResult {
						b.Content, b.IsError = text, failed
						p.MessageHashes[len(p.MessageHashes)-len(p.NewMessages)+j] = trajectory.Hash([]byte(text))
					}
				}
			}
		case *trajectory.ToolSuccess:
			if failed {
				evs[i].Payload = &trajectory.ToolFailure{ToolRef: p.ToolRef, FailureKind: trajectory.FailureToolError, ErrorCode: "exit:1"}
			}
		}
	}
	return evs
}

func TestToolLevelsDecideWhatOfACallIsCompared(t *testing.T) {
	tests := []struct {
		name    string
		level   Level
		text    string
		failed  bool
		classes []Class
	}{
		{"exact compares the output text", LevelExact, "other text", false, []Class{ClassToolOutput, ClassRequestPrefix}},
		{"exit_code ignores a changed output text", LevelExitCode, "other text", false, nil},
		{"exit_code still sees a call that now fails", LevelExitCode, "other text", true, []Class{ClassFailureKind, ClassToolOutput, ClassRequestPrefix}},
		{"ignore ignores a call that now fails", LevelIgnore, "other text", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := bashOutput(load(t, "basic.jsonl"), "same text", false)
			rep := bashOutput(revolatile(load(t, "basic.jsonl")), tc.text, tc.failed)
			r := Sessions(rec, rep, Options{Tools: map[string]Level{"read": tc.level}})
			got := classes(r)
			if len(got) != len(tc.classes) {
				t.Fatalf("classes %v, want %v: %+v", got, tc.classes, r.Divergences)
			}
			for i := range got {
				if got[i] != tc.classes[i] {
					t.Fatalf("classes %v, want %v", got, tc.classes)
				}
			}
		})
	}
	t.Run("ignore still compares the permission decision", func(t *testing.T) {
		r := Sessions(load(t, "basic.jsonl"), denyByRule(load(t, "basic.jsonl"), "toolu_01", "Bash(rm:*)"), Options{Tools: map[string]Level{"read": LevelIgnore}})
		if r.Counts[ClassPermission] != 1 {
			t.Fatalf("want the permission change, got %+v", r.Divergences)
		}
	})
}
