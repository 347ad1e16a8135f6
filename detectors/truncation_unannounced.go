package detectors

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// truncationUnannounced finds calls whose tool_end says the output was
// truncated while the tool_result gives the model no way to know how much
// it missed or to get the rest. A result announces the
// cut when it names where the full output was saved (the spill blob's
// digest, which the path of a spilled blob holds) or states the full
// output's size (tool_end's output_bytes, as a number). Anything less,
// "[output truncated]" alone, leaves the model unable to judge what it
// did not see, which is the mode.
func truncationUnannounced(d *goDetector, s *Session, _ Params) []Finding {
	var out []Finding
	for _, t := range callTraces(s) {
		if !t.hasEnd || !t.hasResult {
			continue
		}
		end := t.end.Payload.(*trajectory.ToolEnd)
		if !end.Truncated {
			continue
		}
		text := t.resultText()
		digest := strings.TrimPrefix(end.Spill, "sha256:")
		if end.Spill != "" && strings.Contains(text, digest) {
			continue
		}
		if end.OutputBytes > 0 && containsNumber(text, end.OutputBytes) {
			continue
		}
		where := "no spill was recorded, so the rest cannot be read back"
		if end.Spill != "" {
			where = "the full output was spilled to " + end.Spill + ", and the result does not say where"
		}
		f := d.finding(s, fmt.Sprintf("%s (%s) was truncated (tool_end truncated, %d bytes of output), and its %d-character tool_result states neither the full size nor where the rest is; %s",
			t.id(), t.tool(), end.OutputBytes, len([]rune(text)), where), t.result, t.end)
		f.ToolUseID = t.id()
		out = append(out, f)
	}
	return out
}

// containsNumber reports whether text holds n as a whole number: its
// digits with no digit (or thousands separator between digits) right
// before or after them, written plainly or with "," or "_" grouping.
func containsNumber(text string, n int64) bool {
	plain := strconv.FormatInt(n, 10)
	forms := []string{plain}
	if len(plain) > 3 {
		for _, sep := range []string{",", "_"} {
			forms = append(forms, group(plain, sep))
		}
	}
	for _, f := range forms {
		for from := 0; ; {
			i := strings.Index(text[from:], f)
			if i < 0 {
				break
			}
			i += from
			j := i + len(f)
			if (i == 0 || !isDigit(text[i-1])) && (j == len(text) || !isDigit(text[j]) && !continuesGroup(text[j:])) {
				return true
			}
			from = i + 1
		}
	}
	return false
}

// group writes digits in groups of three separated by sep.
func group(digits, sep string) string {
	var b strings.Builder
	for i, r := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// continuesGroup reports whether rest starts with a separator and three
// digits: "48,894" found in "48,8945,000" is not that number.
func continuesGroup(rest string) bool {
	return len(rest) >= 4 && (rest[0] == ',' || rest[0] == '_') && isDigit(rest[1]) && isDigit(rest[2]) && isDigit(rest[3])
}
