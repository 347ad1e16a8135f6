package diff

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSelector is wrapped by the errors of ParseSelector.
var ErrSelector = errors.New("bad label selector")

// Selector keeps the sessions of one corpus that carry a label:
// tag:KEY=VALUE (a session_start tag), model:M, provider:P,
// config_hash:H or harness_version:V.
type Selector struct {
	// Field is tag, model, provider, config_hash or harness_version.
	Field string
	// Key is the tag's key; empty for the other fields.
	Key   string
	Value string
}

// selectorFields are the session_start fields a selector may name.
var selectorFields = []string{"tag", "model", "provider", "config_hash", "harness_version"}

// ParseSelector reads tag:prompt=v1, model:claude-x and the like.
func ParseSelector(s string) (*Selector, error) {
	field, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return nil, fmt.Errorf("%w %q: write FIELD:VALUE, FIELD one of %s (tag:prompt=v1, model:claude-sonnet-4)", ErrSelector, s, strings.Join(selectorFields, ", "))
	}
	sel := &Selector{Field: field, Value: rest}
	switch field {
	case "tag":
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w %q: a tag selector is tag:KEY=VALUE (tag:prompt=v1)", ErrSelector, s)
		}
		sel.Key, sel.Value = k, v
	case "model", "provider", "config_hash", "harness_version":
	default:
		return nil, fmt.Errorf("%w %q: unknown field %q; use %s", ErrSelector, s, field, strings.Join(selectorFields, ", "))
	}
	return sel, nil
}

// String writes the selector as ParseSelector reads it.
func (s *Selector) String() string {
	if s.Field == "tag" {
		return "tag:" + s.Key + "=" + s.Value
	}
	return s.Field + ":" + s.Value
}

// Cond is the SQL condition on the sessions view's session column that
// keeps the selected sessions. It reads the labels from raw_session_start,
// which every recording has, so that it holds whatever columns the
// sessions view exposes.
func (s *Selector) Cond() string {
	col := s.Field
	if s.Field == "tag" {
		col = "json_extract_string(tags, " + sqlString("$."+jsonPathKey(s.Key)) + ")"
	}
	return "session IN (SELECT session FROM raw_session_start WHERE " + col + " = " + sqlString(s.Value) + ")"
}

// jsonPathKey quotes a tag key for a JSON path when it is not a plain name.
func jsonPathKey(k string) string {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return `"` + strings.ReplaceAll(k, `"`, `\"`) + `"`
		}
	}
	return k
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
