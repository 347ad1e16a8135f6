package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestNewRejectsBadConfigsNamingHookAndField(t *testing.T) {
	ok := Config{Name: "ok", Event: EventPreToolUse, Command: "true"}
	tests := []struct {
		name  string
		cfgs  []Config
		field string
		// want are fragments the message must contain.
		want []string
	}{
		{
			name:  "A hook without a name is rejected and the message says how to name it.",
			cfgs:  []Config{ok, {Event: EventPreToolUse, Command: "true"}},
			field: "name",
			want:  []string{"hooks[1]", "field name", "is missing"},
		},
		{
			name:  "A name that is not a label (it has a space) is rejected.",
			cfgs:  []Config{{Name: "my hook", Event: EventPreToolUse, Command: "true"}},
			field: "name",
			want:  []string{"hooks[0]", `"my hook"`, "must be a label"},
		},
		{
			name:  "A name used twice is rejected at the second use, pointing at the first.",
			cfgs:  []Config{ok, ok},
			field: "name",
			want:  []string{"hooks[1]", `"ok"`, "already used by hooks[0]"},
		},
		{
			name:  "An event in the wrong case is rejected with the valid spellings.",
			cfgs:  []Config{{Name: "x", Event: "pretooluse", Command: "true"}},
			field: "event",
			want:  []string{"hooks[0]", `"x"`, "field event", "PreToolUse", "PostToolUse"},
		},
		{
			name:  "A missing event is rejected.",
			cfgs:  []Config{{Name: "x", Command: "true"}},
			field: "event",
			want:  []string{"field event", "is missing"},
		},
		{
			name:  "A matcher that is not a valid Go regexp is rejected with an example of a good one.",
			cfgs:  []Config{{Name: "x", Event: EventPostToolUse, Matcher: "bash(", Command: "true"}},
			field: "matcher",
			want:  []string{"field matcher", "not a valid Go regular expression", "bash|write"},
		},
		{
			name:  "A blank command is rejected.",
			cfgs:  []Config{{Name: "x", Event: EventPreToolUse, Command: "  "}},
			field: "command",
			want:  []string{"field command", "is missing"},
		},
		{
			name:  "A negative timeout is rejected with the expected form.",
			cfgs:  []Config{{Name: "x", Event: EventPreToolUse, Command: "true", Timeout: -time.Second}},
			field: "timeout",
			want:  []string{"field timeout", `"5s"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.cfgs, t.TempDir())
			if err == nil {
				t.Fatalf("New accepted the configs and returned %v", r)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			if ce.Field != tt.field {
				t.Errorf("field = %q, want %q (error: %v)", ce.Field, tt.field, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestNewReportsEveryProblemAtOnce(t *testing.T) {
	_, err := New([]Config{
		{Name: "", Event: "", Command: ""},
		{Name: "b", Event: EventPreToolUse, Matcher: "(", Command: "true"},
	}, t.TempDir())
	for _, w := range []string{"hooks[0]: field name", "hooks[0]: field event", "hooks[0]: field command", `hooks[1] ("b"): field matcher`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
}

func TestNewRejectsAMissingWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	_, err := New([]Config{{Name: "x", Event: EventPreToolUse, Command: "true"}}, missing)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("New with a missing workspace: err = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestNewWithoutHooksNeedsNoWorkspace(t *testing.T) {
	r, err := New(nil, "")
	if err != nil || r == nil {
		t.Fatalf("New(nil, \"\") = %v, %v; want a Runner that does nothing", r, err)
	}
}

func TestNewDefaultsTheTimeout(t *testing.T) {
	r, err := New([]Config{{Name: "x", Event: EventPreToolUse, Command: "true"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.hooks[0].timeout; got != DefaultTimeout {
		t.Fatalf("timeout = %v, want %v", got, DefaultTimeout)
	}
}

func TestConfigDecodesFromYAML(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Config
		wantErr string
	}{
		{
			name: "A full hook entry decodes, with the timeout written as a duration string.",
			yaml: "name: fmt\nevent: PostToolUse\nmatcher: write|edit\ncommand: gofmt -l .\ntimeout: 5s\n",
			want: Config{Name: "fmt", Event: EventPostToolUse, Matcher: "write|edit", Command: "gofmt -l .", Timeout: 5 * time.Second},
		},
		{
			name:    "A timeout that is not a duration is a decode error naming the line.",
			yaml:    "name: fmt\nevent: PostToolUse\ncommand: x\ntimeout: soon\n",
			wantErr: "line 4",
		},
		{
			name:    "A bare number of seconds is rejected rather than read as nanoseconds.",
			yaml:    "name: fmt\nevent: PostToolUse\ncommand: x\ntimeout: 5\n",
			wantErr: "line 4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Config
			err := yaml.Unmarshal([]byte(tt.yaml), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q (decoded %+v)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("decoded %+v, want %+v", got, tt.want)
			}
		})
	}
}
