package trajectory

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEveryPayloadHasAFastDecoder fails when a payload type gets a field
// the fast decoder does not handle: the payload would still decode, through
// encoding/json, but at a third of the speed, which no other test sees.
// Give the field a supported kind (see fastdecode.go) or teach the
// compiler the new one.
func TestEveryPayloadHasAFastDecoder(t *testing.T) {
	for _, et := range eventTypes {
		sd := fastDecoderOf(et)
		if sd == nil {
			t.Errorf("%s: no fast decoder; a field of its payload has a kind fastdecode.go does not handle", et)
			continue
		}
		want := payloadFieldsOf(et)
		if len(sd.fields) != len(want.allowed) {
			t.Errorf("%s: the fast decoder knows %d fields, collectFields %d", et, len(sd.fields), len(want.allowed))
		}
		for _, req := range want.required {
			k, ok := sd.lookup([]byte(req))
			if !ok || sd.required&(1<<k) == 0 {
				t.Errorf("%s: field %q is required but the fast decoder does not require it", et, req)
			}
		}
	}
}

// TestFastDecoderCompilesAnAddedOptionalField compiles a payload-like
// type with a field of each supported kind added, as another change to
// the contract might add one, and decodes a value of it: no hand edit is
// needed for a new field.
func TestFastDecoderCompilesAnAddedOptionalField(t *testing.T) {
	type added struct {
		ToolRef
		Note    string            `json:"note,omitempty"`
		Count   *int              `json:"count,omitempty"`
		Parts   []ContentBlock    `json:"parts,omitempty"`
		Labels  map[string]string `json:"labels,omitempty"`
		Extra   json.RawMessage   `json:"extra,omitempty"`
		Ratio   float64           `json:"ratio,omitempty"`
		Enabled bool              `json:"enabled,omitempty"`
	}
	c := &compiler{structs: map[reflect.Type]*structDecoder{}, bad: map[reflect.Type]bool{}}
	dec, ok := c.decoderOf(reflect.TypeFor[added]())
	if !ok {
		t.Fatal("a struct of supported kinds did not compile")
	}
	in := `{"tool_use_id":"a","tool":"b","note":"n","count":3,"parts":[{"type":"text","text":"x"}],"labels":{"k":"v"},"extra":{"z":[1]},"ratio":0.5,"enabled":true}`
	var got added
	end, ok := dec(&fastState{}, []byte(in), 0, reflect.ValueOf(&got).Elem())
	if !ok || end != len(in) {
		t.Fatalf("decode gave end %d ok %v, want %d true", end, ok, len(in))
	}
	var want added
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fast decoder gave %+v, encoding/json %+v", got, want)
	}
}
