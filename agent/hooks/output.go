package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Permission decisions a PreToolUse hook may give, strictest last.
const (
	decisionAllow = "allow"
	decisionAsk   = "ask"
	decisionDeny  = "deny"
)

// strictness orders permission decisions so the strictest of several hooks
// wins; "" (no decision) is below all.
func strictness(d string) int {
	switch d {
	case decisionAllow:
		return 1
	case decisionAsk:
		return 2
	case decisionDeny:
		return 3
	}
	return 0
}

// errBadOutput marks stdout that is not a valid hook answer.
var errBadOutput = errors.New("hook output is not a valid answer")

// wireOutput is the JSON a hook may print on stdout, in Claude Code's
// protocol. Unknown fields (continue, suppressOutput, systemMessage, …) are
// ignored so that hooks written for Claude Code still parse.
type wireOutput struct {
	Decision           string        `json:"decision"`
	Reason             string        `json:"reason"`
	HookSpecificOutput *wireSpecific `json:"hookSpecificOutput"`
}

type wireSpecific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
}

// answer is a hook's stdout, checked and reduced to what retrace acts on.
type answer struct {
	block  bool
	reason string
	// decision is "", allow, ask or deny.
	decision       string
	decisionReason string
	// updatedInput is a compacted JSON object, or nil when the hook gave none.
	updatedInput json.RawMessage
	context      string
}

// parseOutput reads a hook's stdout. Empty stdout means continue. Anything
// that is not one JSON object with fields of the right types and known
// values is an error, and then none of it is used: a half-understood answer
// must not half-apply.
func parseOutput(stdout []byte) (answer, error) {
	var a answer
	stdout = bytes.TrimSpace(stdout)
	if len(stdout) == 0 {
		return a, nil
	}
	if stdout[0] != '{' {
		return a, fmt.Errorf("%w: stdout is neither empty nor a JSON object", errBadOutput)
	}
	var w wireOutput
	if err := json.Unmarshal(stdout, &w); err != nil {
		return a, fmt.Errorf("%w: %w", errBadOutput, err)
	}

	switch w.Decision {
	case "":
	case "block":
		a.block = true
		a.reason = w.Reason
	case "approve":
		// The older Claude Code form of "allow this call": kept apart from
		// block and fed to the permission chain like permissionDecision.
		a.decision = decisionAllow
		a.decisionReason = w.Reason
	default:
		return answer{}, fmt.Errorf("%w: decision is %q, want \"block\" or \"approve\"", errBadOutput, w.Decision)
	}

	if s := w.HookSpecificOutput; s != nil {
		switch s.PermissionDecision {
		case "":
		case decisionAllow, decisionAsk, decisionDeny:
			a.decision = s.PermissionDecision
			a.decisionReason = s.PermissionDecisionReason
		default:
			return answer{}, fmt.Errorf("%w: permissionDecision is %q, want allow, ask or deny", errBadOutput, s.PermissionDecision)
		}
		if len(s.UpdatedInput) > 0 && !bytes.Equal(s.UpdatedInput, []byte("null")) {
			if s.UpdatedInput[0] != '{' {
				return answer{}, fmt.Errorf("%w: updatedInput is not a JSON object", errBadOutput)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, s.UpdatedInput); err != nil {
				return answer{}, fmt.Errorf("%w: updatedInput: %w", errBadOutput, err)
			}
			a.updatedInput = buf.Bytes()
		}
		a.context = s.AdditionalContext
	}
	return a, nil
}

// jsonEqual reports whether a and b encode the same JSON value: key order,
// spacing and number spelling (1, 1.0, 1e0) do not matter. Hooks commonly
// decode and re-encode an input they leave alone, and that must not count as
// a rewrite. Undecodable text is compared byte for byte.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	if errA != nil || errB != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return valueEqual(va, vb)
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func valueEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !valueEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !valueEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numberEqual(a, b)
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}

// numberEqual compares two JSON numbers by exact decimal value, so 1, 1.0
// and 1e0 are equal while integers beyond float64's precision stay
// distinct. Working on the decimal digits keeps a hostile exponent cheap.
func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	da, okA := canonicalDecimal(string(a))
	db, okB := canonicalDecimal(string(b))
	return okA && okB && da == db
}

// decimal is a number as sign × digits × 10^exp, with digits free of
// leading and trailing zeros; zero has no digits and no sign.
type decimal struct {
	negative bool
	digits   string
	exp      int64
}

// canonicalDecimal parses a JSON number into its canonical decimal.
func canonicalDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.negative = true
		s = s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.ParseInt(expPart, 10, 64)
		if err != nil || e > math.MaxInt64/2 || e < math.MinInt64/2 {
			return decimal{}, false
		}
		d.exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if !allDigits(intPart) || !allDigits(frac) || intPart == "" {
		return decimal{}, false
	}
	digits := intPart + frac
	d.exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	if d.digits == "" {
		return decimal{}, true
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
