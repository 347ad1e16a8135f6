package trajectory

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast payload decoder.
//
// Decoding a line's payload with encoding/json costs most of a strict
// decode: the stdlib scans every value twice (once to find its end, once to
// decode it) and walks its field tables by reflection at every step. The
// fast decoder decodes the payload fields straight into the payload while
// scanObject finds them (earlyDecode; fields before the type member right
// after the scan), in one pass, with decoders compiled once per Go type
// from the same struct tags encoding/json reads. Nothing in it is written
// per payload and nothing is generated: a field added to a payload type
// (with a json tag, of a kind below) is decoded with no edit here, and a
// field of any other kind makes its payload type go the encoding/json way,
// which TestEveryPayloadHasAFastDecoder reports.
//
// It decodes only the plain case and gives up (returns false) on anything
// else: a syntax error, a value of the wrong JSON type, a number out of
// range, a nested key that is not exactly a field name (encoding/json also
// matches keys case-insensitively), a nested key given twice (encoding/json
// merges the two), a string escape it does not handle. The caller then
// decodes the line again with encoding/json, which accepts or rejects it and
// words the error exactly as before. So the fast decoder never changes
// what is accepted nor any error: it only has to agree with encoding/json on
// the lines it accepts, which FuzzFastDecoderAgreesWithReference checks.
//
// What a line costs beyond its payload is kept small too: a key is looked
// up once per line (member.id), the envelope's type and ts are read without
// a string made of them, the buffers a Decoder grows (line, members,
// intern table, list scratch) go on to the next Decoder with its line
// parser, and a list is decoded into scratch and copied once at its length.
// BenchmarkDecodeCorpus reports events/cpu-s and allocations per corpus.
//
// Supported kinds: strings (named string types too), bools, signed
// integers, float64, json.RawMessage, pointers, slices and string-keyed
// maps of these, and structs of these (embedded structs included, as
// collectFields reads them).

// fastState is what the decoders of one Decoder share: a table of the
// short strings seen lately, so that the strings a file repeats (tool
// names, closed-set values, tool_use ids, message hashes, which every
// model_request repeats) are allocated once, not once per event, and the
// scratch a list of strings is gathered in.
type fastState struct {
	strings *[internSlots]string
	list    []string
	// slices holds a scratch slice per slice decoder (see sliceDecoder).
	slices []reflect.Value
}

// The intern table is direct-mapped: a string takes the slot its hash
// names, replacing what was there, so memory stays constant on any input
// and a look-up is a hash and one comparison.
const (
	internBits     = 10
	internSlots    = 1 << internBits
	maxInternedLen = 64
)

// intern returns b as a string, the same string for the same bytes while
// they hold their slot.
func (st *fastState) intern(b []byte) string {
	if len(b) > maxInternedLen {
		return string(b)
	}
	// The slot is chosen from the length and the first and last eight
	// bytes, which tell apart the strings a file repeats (hashes differ
	// everywhere, names at their ends) at a fraction of hashing every
	// byte; two strings that share a slot only take turns in it.
	var h uint64
	if len(b) >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[len(b)-8:]), 29)
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	h = (h ^ uint64(len(b))) * 0x9e3779b97f4a7c15
	if st.strings == nil {
		// A table handed on with its line parser (see parsers) still
		// holds strings of the file before, which are only strings: a
		// look-up compares contents.
		st.strings = new([internSlots]string)
	}
	slot := &st.strings[h>>(64-internBits)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// valueDecoder decodes the JSON value starting at b[i] into v, which is
// settable and holds its zero value, and returns the offset just past it.
type valueDecoder func(st *fastState, b []byte, i int, v reflect.Value) (int, bool)

// structDecoder decodes a JSON object into a struct.
type structDecoder struct {
	fields []structField
	byName map[string]int
	// byLen lists, for each name length, the fields with a name of that
	// length: a look-up compares a key with one or two names, cheaper than
	// hashing it.
	byLen [][]int
	// required has bit k set when fields[k] is required (no omitempty),
	// as collectFields decides.
	required uint64
}

type structField struct {
	name  string
	index []int
	dec   valueDecoder
}

var (
	fastOnce  sync.Once
	fastPlans map[EventType]*structDecoder
)

// fastDecoderOf returns the compiled decoder of t's payload, or nil when
// the payload has a field the fast decoder does not handle.
func fastDecoderOf(t EventType) *structDecoder {
	fastOnce.Do(func() {
		fastPlans = make(map[EventType]*structDecoder, len(eventTypes))
		c := &compiler{structs: map[reflect.Type]*structDecoder{}, bad: map[reflect.Type]bool{}}
		for _, et := range eventTypes {
			typ := reflect.TypeOf(newPayload(et)).Elem()
			if sd, ok := c.structOf(typ); ok {
				fastPlans[et] = sd
			}
		}
	})
	return fastPlans[t]
}

// earlyDecode decodes payload fields while scanObject finds them. Lines
// written by retrace give the envelope first, so once the type member is
// met the payload's fields that follow are decoded in the scan's one pass;
// fields before it are decoded after the scan, from their members.
type earlyDecode struct {
	fast *fastState
	// off turns early decoding off (the reference path).
	off     bool
	payload Payload
	sd      *structDecoder
	v       reflect.Value
	// failed is set when a value did not decode: the payload is then
	// thrown away and decoded again whole.
	failed bool
	// id is the member id (see member.id) of the key value last saw,
	// idUnresolved when it did not look the key up.
	id int
}

// value is called by scanObject for the value of key at b[i]. It returns
// the offset past the value and true when it decoded it. Its end is the one
// skipValue finds for the same value, so the outline does not change: for a
// string, an object or an array that decodes both end where the value ends;
// a number or literal that decodes ends where skipValue ends only if a
// delimiter follows, which is checked.
func (e *earlyDecode) value(key, b []byte, i int) (int, bool) {
	e.id = idUnresolved
	switch {
	case e.off:
		return 0, false
	case e.payload == nil:
		if string(key) == "type" {
			if s, _, ok := e.fast.readString(b, i); ok {
				if p := newPayload(EventType(s)); p != nil {
					if sd := fastDecoderOf(p.EventType()); sd != nil {
						e.payload, e.sd, e.v = p, sd, reflect.ValueOf(p).Elem()
					}
				}
			}
		}
		return 0, false
	}
	if k := envelopeIndex(key); k >= 0 {
		e.id = idEnvelope + k
		return 0, false
	}
	k, ok := e.sd.lookup(key)
	if !ok {
		e.id = idNone
		return 0, false
	}
	e.id = k
	if e.failed {
		return 0, false
	}
	f := &e.sd.fields[k]
	end, ok := f.dec(e.fast, b, i, fieldOf(e.v, f.index))
	if ok && b[i] != '"' && b[i] != '{' && b[i] != '[' && end < len(b) {
		switch b[end] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
		default:
			ok = false
		}
	}
	if !ok {
		e.failed = true
		return 0, false
	}
	return end, true
}

// fieldOf returns the field of v at index; embedded structs are values,
// never pointers (compile refuses those).
func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

// compiler builds decoders, once per Go type.
type compiler struct {
	structs map[reflect.Type]*structDecoder
	bad     map[reflect.Type]bool
	// slices counts the slice decoders compiled: each has a scratch
	// slot of that number in fastState.slices.
	slices int
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoderOf returns the decoder of values of type t, or false when t is
// not one the fast decoder handles.
func (c *compiler) decoderOf(t reflect.Type) (valueDecoder, bool) {
	if t == rawMessageType {
		return decodeRaw, true
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textType) || reflect.PointerTo(t).Implements(textType) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.String:
		return decodeString, true
	case reflect.Bool:
		return decodeBool, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt, true
	case reflect.Float64:
		return decodeFloat, true
	case reflect.Pointer:
		elem, ok := c.decoderOf(t.Elem())
		if !ok {
			return nil, false
		}
		return pointerDecoder(t.Elem(), elem), true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, false // base64 in encoding/json
		}
		if t == reflect.TypeFor[[]string]() {
			return decodeStrings, true
		}
		elem, ok := c.decoderOf(t.Elem())
		if !ok {
			return nil, false
		}
		c.slices++
		return sliceDecoder(t, elem, c.slices-1), true
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			return nil, false
		}
		elem, ok := c.decoderOf(t.Elem())
		if !ok {
			return nil, false
		}
		return mapDecoder(t, elem), true
	case reflect.Struct:
		sd, ok := c.structOf(t)
		if !ok {
			return nil, false
		}
		return sd.decode, true
	}
	return nil, false
}

// structOf compiles the decoder of struct type t.
func (c *compiler) structOf(t reflect.Type) (*structDecoder, bool) {
	if sd, ok := c.structs[t]; ok {
		return sd, true
	}
	if c.bad[t] {
		return nil, false
	}
	sd := &structDecoder{byName: map[string]int{}}
	// Registered before its fields, so a type that contains itself
	// (through a pointer or a slice) compiles.
	c.structs[t] = sd
	if !c.addFields(sd, t, nil) || len(sd.fields) > 64 {
		delete(c.structs, t)
		c.bad[t] = true
		return nil, false
	}
	return sd, true
}

// addFields adds the fields of t as collectFields reads them: tagged
// fields, and the fields of untagged embedded structs, promoted. A name
// given twice (which encoding/json resolves by depth) is not handled.
func (c *compiler) addFields(sd *structDecoder, t reflect.Type, index []int) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		at := append(append([]int(nil), index...), i)
		tag, hasTag := f.Tag.Lookup("json")
		if f.Anonymous && !hasTag {
			if f.Type.Kind() != reflect.Struct {
				if f.IsExported() {
					return false
				}
				continue
			}
			if !c.addFields(sd, f.Type, at) {
				return false
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := cutComma(tag)
		if name == "" {
			name = f.Name
		}
		if opts != "" && opts != "omitempty" && opts != "omitzero" {
			return false // ",string" and friends
		}
		if _, dup := sd.byName[name]; dup {
			return false
		}
		dec, ok := c.decoderOf(f.Type)
		if !ok {
			return false
		}
		if !strings.Contains(opts, "omitempty") && len(sd.fields) < 64 {
			sd.required |= 1 << len(sd.fields)
		}
		for len(sd.byLen) <= len(name) {
			sd.byLen = append(sd.byLen, nil)
		}
		sd.byLen[len(name)] = append(sd.byLen[len(name)], len(sd.fields))
		sd.byName[name] = len(sd.fields)
		sd.fields = append(sd.fields, structField{name: name, index: at, dec: dec})
	}
	return true
}

func cutComma(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// lookup returns the index of the field named key, or false.
func (sd *structDecoder) lookup(key []byte) (int, bool) {
	if len(key) >= len(sd.byLen) {
		return 0, false
	}
	for _, k := range sd.byLen[len(key)] {
		if sd.fields[k].name == string(key) {
			return k, true
		}
	}
	return 0, false
}

// decode decodes an object into the struct v. Every key must be exactly a
// field name, once.
func (sd *structDecoder) decode(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	if end, ok := isNull(b, i); ok {
		return end, true // encoding/json leaves the struct as it is
	}
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var seen uint64
	for {
		key, j, ok := plainKey(b, i)
		if !ok {
			return 0, false
		}
		k, ok := sd.lookup(key)
		if !ok || seen&(1<<k) != 0 {
			return 0, false
		}
		seen |= 1 << k
		f := &sd.fields[k]
		if i, ok = f.dec(st, b, j, fieldOf(v, f.index)); !ok {
			return 0, false
		}
		if i, ok = nextMember(b, i, '}'); !ok {
			return 0, false
		}
		if b[i-1] == '}' {
			return i, true
		}
	}
}

// plainKey reads an object key without escapes at b[i] and the colon
// after it, and returns the key and the offset of the value.
func plainKey(b []byte, i int) (key []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	j := i + 1
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			break
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, 0, false
		}
	}
	if j >= len(b) {
		return nil, 0, false
	}
	key = b[i+1 : j]
	j = skipSpace(b, j+1)
	if j >= len(b) || b[j] != ':' {
		return nil, 0, false
	}
	return key, skipSpace(b, j+1), true
}

// nextMember moves past the space after a value to the next member or
// element, or past the closing bracket; the byte before the returned
// offset tells which.
func nextMember(b []byte, i int, closing byte) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), true
	case closing:
		return i + 1, true
	}
	return 0, false
}

func isNull(b []byte, i int) (int, bool) {
	if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
		return i + 4, true
	}
	return 0, false
}

func decodeString(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	if end, ok := isNull(b, i); ok {
		return end, true
	}
	s, end, ok := st.readString(b, i)
	if !ok {
		return 0, false
	}
	v.SetString(s)
	return end, true
}

// readString decodes the JSON string at b[i] as encoding/json does.
func (st *fastState) readString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	j := plainRun(b, i+1)
	if j < len(b) && b[j] == '"' {
		return st.intern(b[i+1 : j]), j + 1, true
	}
	return readEscaped(b, i, j)
}

// plainRun returns the offset of the first byte from b[j] on that is a
// quote, a backslash, a control character or not ASCII, or len(b). Text
// and tool output make long strings: eight bytes are tested at a time,
// and a word holding any such byte is read byte by byte.
func plainRun(b []byte, j int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(b); j += 8 {
		w := binary.LittleEndian.Uint64(b[j:])
		q, bs := w^(lo*'"'), w^(lo*'\\')
		// A byte of q or bs is zero where w holds a quote or a backslash;
		// (x-lo)&^x has the high bit of a zero byte set, (w-0x20*lo)&^w
		// that of a byte below 0x20 (w's bytes being ASCII, else w&hi).
		if ((q-lo)&^q|(bs-lo)&^bs|(w-0x20*lo)&^w|w)&hi != 0 {
			break
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return j
		}
	}
	return j
}

// readEscaped decodes a string holding escapes or non-ASCII bytes; b[i]
// opens it and b[i+1:j] is plain ASCII.
func readEscaped(b []byte, i, j int) (string, int, bool) {
	out := append(make([]byte, 0, 64), b[i+1:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return string(out), j + 1, true
		case c < 0x20:
			return "", 0, false
		case c == '\\':
			if j+1 >= len(b) {
				return "", 0, false
			}
			switch b[j+1] {
			case '"', '\\', '/':
				out = append(out, b[j+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(b, j+2)
				// Surrogates, paired or not, are left to encoding/json.
				if !ok || r >= 0xd800 && r < 0xe000 {
					return "", 0, false
				}
				out = utf8.AppendRune(out, r)
				j += 4
			default:
				return "", 0, false
			}
			j += 2
		case c < 0x80:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return "", 0, false // encoding/json makes it U+FFFD
			}
			out = append(out, b[j:j+size]...)
			j += size
		}
	}
	return "", 0, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func decodeBool(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	switch {
	case len(b)-i >= 4 && string(b[i:i+4]) == "true":
		v.SetBool(true)
		return i + 4, true
	case len(b)-i >= 5 && string(b[i:i+5]) == "false":
		return i + 5, true
	}
	return isNull(b, i)
}

// decodeInt takes an integer literal only; a fraction or an exponent is an
// error in encoding/json too.
func decodeInt(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	if end, ok := isNull(b, i); ok {
		return end, true
	}
	end, integer, ok := numberEnd(b, i)
	if !ok || !integer {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[i:end]), 10, 64)
	if err != nil || v.OverflowInt(n) {
		return 0, false
	}
	v.SetInt(n)
	return end, true
}

func decodeFloat(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	if end, ok := isNull(b, i); ok {
		return end, true
	}
	end, _, ok := numberEnd(b, i)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b[i:end]), 64)
	if err != nil {
		return 0, false
	}
	v.SetFloat(f)
	return end, true
}

// numberEnd returns the offset past the JSON number at b[i], and whether
// it has neither fraction nor exponent.
func numberEnd(b []byte, i int) (end int, integer, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return 0, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		start := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == start {
			return 0, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == start {
			return 0, false, false
		}
	}
	return i, integer, true
}

// decodeRaw keeps the value's bytes, as json.RawMessage does (null too).
func decodeRaw(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	end, ok := validValue(b, i, 0)
	if !ok {
		return 0, false
	}
	v.SetBytes(append([]byte(nil), b[i:end]...))
	return end, true
}

// maxDepth is encoding/json's nesting limit; deeper values are its to reject.
const maxDepth = 10000

// validValue checks the JSON value at b[i] and returns the offset past it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i, ok = validString(b, i); !ok {
					return 0, false
				}
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return 0, false
				}
				i = skipSpace(b, i+1)
			}
			if i, ok = validValue(b, i, depth+1); !ok {
				return 0, false
			}
			if i, ok = nextMember(b, i, closing); !ok {
				return 0, false
			}
			if b[i-1] == closing {
				return i, true
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	end, _, ok := numberEnd(b, i)
	return end, ok
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// validString checks the JSON string at b[i]; like encoding/json's
// scanner it lets invalid UTF-8 through (decoding replaces it).
func validString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return 0, false
				}
				i += 5
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func pointerDecoder(elemType reflect.Type, elem valueDecoder) valueDecoder {
	return func(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
		if end, ok := isNull(b, i); ok {
			return end, true // nil, as encoding/json sets it
		}
		p := reflect.New(elemType)
		end, ok := elem(st, b, i, p.Elem())
		if !ok {
			return 0, false
		}
		v.Set(p)
		return end, true
	}
}

// sliceDecoder decodes an array into a slice of type t. The elements are
// decoded into a scratch slice the Decoder keeps (slot names it in
// fastState.slices) and copied once into a slice of the exact length:
// growing the result element by element allocated about twice the bytes
// the elements take, most of a corpus's allocations (payload lists of
// content blocks are large elements).
func sliceDecoder(t reflect.Type, elem valueDecoder, slot int) valueDecoder {
	return func(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
		if end, ok := isNull(b, i); ok {
			return end, true
		}
		if i >= len(b) || b[i] != '[' {
			return 0, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			// An empty array is an empty slice, not nil, as in encoding/json.
			v.Set(reflect.MakeSlice(t, 0, 0))
			return i + 1, true
		}
		scratch := st.takeSlice(slot, t)
		// The scratch goes back to its slot however this ends, cleared, so
		// that every element starts at its zero value and no string of
		// this line stays reachable from it.
		defer func() {
			scratch.Clear()
			scratch.SetLen(0)
			st.slices[slot] = scratch
		}()
		for n := 0; ; n++ {
			if n >= scratch.Cap() {
				scratch.Grow(max(4, n))
			}
			scratch.SetLen(n + 1)
			var ok bool
			if i, ok = elem(st, b, i, scratch.Index(n)); !ok {
				return 0, false
			}
			if i, ok = nextMember(b, i, ']'); !ok {
				return 0, false
			}
			if b[i-1] == ']' {
				// Grown in place: a slice made by reflect.MakeSlice
				// costs a second allocation, for its header.
				v.Grow(n + 1)
				v.SetLen(n + 1)
				reflect.Copy(v, scratch)
				return i, true
			}
		}
	}
}

// takeSlice returns the scratch slice of slot, empty, and leaves the slot
// empty until it is given back, so that a slice of the same type nested in
// an element gets a scratch of its own.
func (st *fastState) takeSlice(slot int, t reflect.Type) reflect.Value {
	for len(st.slices) <= slot {
		st.slices = append(st.slices, reflect.Value{})
	}
	s := st.slices[slot]
	st.slices[slot] = reflect.Value{}
	if !s.IsValid() {
		s = reflect.New(t).Elem()
	}
	return s
}

// decodeStrings decodes a list of strings, the most common list (tool
// names, message hashes), gathering it in scratch so that it is allocated
// once at its size.
func decodeStrings(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
	if end, ok := isNull(b, i); ok {
		return end, true
	}
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	list := st.list[:0]
	i = skipSpace(b, i+1)
	// v is a []string (decoderOf gives this decoder no other type) and
	// addressable; it is set through a pointer, since reflect.ValueOf of
	// a slice allocates its header.
	dst := v.Addr().Interface().(*[]string)
	if i < len(b) && b[i] == ']' {
		*dst = []string{}
		return i + 1, true
	}
	for {
		s, end, ok := st.readString(b, i)
		if !ok {
			return 0, false
		}
		list = append(list, s)
		if i, ok = nextMember(b, end, ']'); !ok {
			return 0, false
		}
		if b[i-1] == ']' {
			break
		}
	}
	st.list = list
	*dst = append([]string(nil), list...)
	clear(list)
	return i, true
}

func mapDecoder(t reflect.Type, elem valueDecoder) valueDecoder {
	return func(st *fastState, b []byte, i int, v reflect.Value) (int, bool) {
		if end, ok := isNull(b, i); ok {
			return end, true
		}
		if i >= len(b) || b[i] != '{' {
			return 0, false
		}
		m := reflect.MakeMap(t)
		v.Set(m)
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			key, j, ok := plainKey(b, i)
			if !ok {
				return 0, false
			}
			// A fresh element each time: a repeated key replaces, as in
			// encoding/json.
			e := reflect.New(t.Elem()).Elem()
			if i, ok = elem(st, b, j, e); !ok {
				return 0, false
			}
			m.SetMapIndex(reflect.ValueOf(st.intern(key)), e)
			if i, ok = nextMember(b, i, '}'); !ok {
				return 0, false
			}
			if b[i-1] == '}' {
				return i, true
			}
		}
	}
}
