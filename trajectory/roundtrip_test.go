package trajectory

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"
)

func TestEncodeDecodeRoundTripKeepsEveryEventIntact(t *testing.T) {
	evs := sampleSession("20261130-090000.000-0000abcd", 5)
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	for _, e := range evs {
		if err := e.Validate(); err != nil {
			t.Fatalf("sample event seq %d is invalid: %v", e.Seq, err)
		}
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[EventType]bool{}
	dec := NewDecoder(&buf, "mem.jsonl")
	for i := 0; ; i++ {
		got, err := dec.Next()
		if errors.Is(err, io.EOF) {
			if i != len(evs) {
				t.Fatalf("decoded %d events, want %d", i, len(evs))
			}
			break
		}
		if err != nil {
			t.Fatalf("line %d: %v", dec.Line(), err)
		}
		if !reflect.DeepEqual(got, evs[i]) {
			t.Fatalf("event %d differs after a round trip:\n got %#v\nwant %#v", i, got, evs[i])
		}
		seen[got.Type()] = true
	}
	for _, et := range []EventType{TypeSessionStart, TypeWorkspaceSnapshot, TypeModelRequest, TypeModelResponse, TypeModelError, TypeToolCall,
		TypeHookRun, TypePermissionAllow, TypeToolSuccess, TypeToolFailure, TypeToolEnd, TypeToolResult,
		TypeDefenseTrigger, TypeReminder, TypeCompaction, TypeSessionEnd, TypeMCPServer} {
		if !seen[et] {
			t.Errorf("the sample session never uses %s", et)
		}
	}
}

func TestANilPayloadIsRefusedNotWritten(t *testing.T) {
	ev := NewEvent("s", 1, time.Now(), 0, (*ToolCall)(nil))
	if _, err := AppendEvent(nil, ev); !errors.Is(err, ErrMissingField) {
		t.Fatalf("AppendEvent err = %v, want ErrMissingField", err)
	}
	if err := ev.Validate(); !errors.Is(err, ErrMissingField) {
		t.Fatalf("Validate err = %v, want ErrMissingField", err)
	}
}
