package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Names of the dialects, as they appear in Error.Dialect.
const (
	NameAnthropic    = "anthropic"
	NameOpenAI       = "openai"
	NameOpenAIStrict = "openai-strict"
)

// ErrInvalidSchema is wrapped by errors for input that is not a usable
// JSON Schema at all: not JSON, not an object, a keyword with a value of
// the wrong JSON type. No dialect can send it.
var ErrInvalidSchema = errors.New("invalid tool schema")

// ErrUnsupported is wrapped by errors for a valid schema that the dialect
// cannot express without changing what it accepts, such as a oneOf or a
// free-form object under OpenAI strict mode. The schema can still be sent
// in a laxer dialect (OpenAI with strict off).
var ErrUnsupported = errors.New("tool schema not expressible in this dialect")

// Error is a schema a dialect refused, with the JSON path of the node at
// fault, e.g. "$.properties.todos.items.oneOf".
type Error struct {
	// Dialect is NameAnthropic, NameOpenAI or NameOpenAIStrict.
	Dialect string
	// Path is the JSON path of the offending node or keyword.
	Path string
	// Reason says what is wrong and what to do about it.
	Reason string
	// Err is ErrInvalidSchema or ErrUnsupported.
	Err error
}

// Error returns the path and the reason in one line.
func (e *Error) Error() string {
	return fmt.Sprintf("%s tool schema at %s: %s", e.Dialect, e.Path, e.Reason)
}

// Unwrap returns ErrInvalidSchema or ErrUnsupported, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

// Anthropic rewrites a neutral tool input schema into the form for an
// Anthropic tool's input_schema. Optional properties stay optional and
// defaults stay (Anthropic supports both); keywords outside Anthropic's
// documented strict subset — numeric constraints, string lengths, minItems
// above 1, unknown formats and the like — move into the node's description
// as text, at every depth. Non-protocol keys such as $schema are dropped.
func Anthropic(schema json.RawMessage) (json.RawMessage, error) {
	return anthropic.rewrite(schema)
}

// OpenAI rewrites a neutral tool input schema into the form for OpenAI
// function parameters with strict off: only the non-protocol keys such as
// $schema are dropped, at every depth; everything else is sent as given.
func OpenAI(schema json.RawMessage) (json.RawMessage, error) {
	return openAI.rewrite(schema)
}

// OpenAIStrict rewrites a neutral tool input schema into OpenAI's strict
// form. At every object node, at any depth, required lists every property,
// a property that was optional becomes nullable (the model sends null for
// "not given"; StripOptionalNulls removes those nulls again), and
// additionalProperties is false. Keywords outside OpenAI's documented
// strict subset (default, string lengths, unknown formats...) move into the
// node's description. A schema strict mode cannot express — oneOf, allOf,
// a free-form object, a node that accepts any value — is an Error wrapping
// ErrUnsupported that names the path, rather than a schema OpenAI would
// refuse.
func OpenAIStrict(schema json.RawMessage) (json.RawMessage, error) {
	return openAIStrict.rewrite(schema)
}

// action is what a dialect does with one keyword of a schema node.
type action int

const (
	// pass sends the value unchanged: it is data (enum, default) or a
	// supported constraint, never descended into.
	pass action = iota
	// drop removes a key that is not part of any provider's protocol.
	drop
	// sub descends into a subschema (an object or a boolean schema).
	sub
	// subMap descends into each value of a name → subschema map.
	subMap
	// subList descends into each element of a list of subschemas.
	subList
	// subItems is "items": a subschema, or a list of them (draft-07 tuples).
	subItems
	// describe moves the keyword into the node's description as text.
	describe
	// reject fails with ErrUnsupported.
	reject
)

// dialect is the descriptor of one family's schema subset:
// the difference is a rewrite of the whole tree, node by node, not a flag.
type dialect struct {
	name    string
	actions map[string]action
	// unknown is the action for keywords not in actions.
	unknown action
	// formats, when not nil, lists the string formats the dialect accepts;
	// any other format is described instead.
	formats map[string]bool
	// maxMinItems, when not negative, is the largest minItems accepted.
	maxMinItems int64
	// strict closes every object, requires every property and makes the
	// optional ones nullable.
	strict bool
}

// metaKeys are emitted by schema generators but belong to no provider's
// protocol; they cost tokens in the cached prefix every turn.
var metaKeys = []string{"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary"}

func actions(groups map[action][]string) map[string]action {
	m := map[string]action{}
	for _, k := range metaKeys {
		m[k] = drop
	}
	for a, keys := range groups {
		for _, k := range keys {
			m[k] = a
		}
	}
	return m
}

// anthropic follows Anthropic's documented strict-tool subset, the same key
// set the official Go SDK's schema transform keeps, plus default, which
// Anthropic documents as supported. This is a
// conservative shaping by documentation, not a fix for an observed 400.
var anthropic = &dialect{
	name: NameAnthropic,
	actions: actions(map[action][]string{
		pass:     {"type", "description", "title", "enum", "const", "required", "pattern", "default", "$ref", "format", "minItems"},
		sub:      {"additionalProperties"},
		subMap:   {"properties", "$defs", "definitions"},
		subList:  {"anyOf", "oneOf", "allOf"},
		subItems: {"items"},
	}),
	unknown: describe,
	formats: setOf("date-time", "time", "date", "duration", "email", "hostname", "uri",
		"ipv4", "ipv6", "uuid"),
	maxMinItems: 1,
}

// openAI is strict off: the schema goes as given, minus non-protocol keys,
// so every subschema position is descended into to find them.
var openAI = &dialect{
	name: NameOpenAI,
	actions: actions(map[action][]string{
		sub: {"additionalProperties", "not", "if", "then", "else", "propertyNames", "contains",
			"unevaluatedItems", "unevaluatedProperties", "additionalItems"},
		subMap:   {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"},
		subList:  {"anyOf", "oneOf", "allOf", "prefixItems"},
		subItems: {"items"},
	}),
	unknown:     pass,
	maxMinItems: -1,
}

// openAIStrict follows OpenAI's documented strict subset: types, enum,
// const, anyOf, $ref/$defs, numeric constraints, pattern and a list of
// formats, minItems and maxItems. The applicators it does not document are
// refused rather than rewritten: no tool schema retrace generates contains
// them, and a rewrite for a path no input reaches is dead code.
var openAIStrict = &dialect{
	name: NameOpenAIStrict,
	actions: actions(map[action][]string{
		pass: {"type", "description", "title", "enum", "const", "$ref", "required", "additionalProperties",
			"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
			"pattern", "format", "minItems", "maxItems"},
		subMap:   {"properties", "$defs", "definitions"},
		subList:  {"anyOf"},
		subItems: {"items"},
		reject: {"oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "propertyNames",
			"dependentSchemas", "prefixItems", "contains", "unevaluatedItems", "unevaluatedProperties",
			"additionalItems", "$dynamicRef", "$recursiveRef"},
	}),
	unknown: describe,
	formats: setOf("date-time", "time", "date", "duration", "email", "hostname",
		"ipv4", "ipv6", "uuid"),
	maxMinItems: -1,
	strict:      true,
}

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// labels name the keywords moved into descriptions in words the model
// reads easily; other keywords appear under their own name.
var labels = map[string]string{
	"minimum":          "Minimum",
	"maximum":          "Maximum",
	"exclusiveMinimum": "Exclusive minimum",
	"exclusiveMaximum": "Exclusive maximum",
	"multipleOf":       "Multiple of",
	"minLength":        "Minimum length",
	"maxLength":        "Maximum length",
	"minItems":         "Minimum items",
	"maxItems":         "Maximum items",
	"uniqueItems":      "Unique items",
	"minProperties":    "Minimum properties",
	"maxProperties":    "Maximum properties",
	"default":          "Default",
	"format":           "Format",
	"examples":         "Examples",
}
