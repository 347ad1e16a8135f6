package trajectory

import (
	"bytes"
	"testing"
)

// payloadCandidate is one way to decode a line's payload members, for
// BenchmarkPayloadDecoders to measure side by side.
type payloadCandidate struct {
	name   string
	decode func(p *lineParser, line []byte, members []member, typ EventType) error
}

// payloadCandidates are the decoders measured: the fast decoder, the
// encoding/json path it replaced, and those that only some builds have
// (encoding/json/v2 with GOEXPERIMENT=jsonv2) add themselves.
var payloadCandidates = []payloadCandidate{
	{"fast", func(p *lineParser, line []byte, members []member, typ EventType) error {
		p.reference = false
		_, err := p.decodePayload(line, members, typ)
		return err
	}},
	{"encoding_json", func(p *lineParser, line []byte, members []member, typ EventType) error {
		p.reference = true
		_, err := p.decodePayload(line, members, typ)
		return err
	}},
}

// BenchmarkPayloadDecoders measures the payload decoding alone (the
// envelope and the outline are scanned beforehand), which is where the
// candidates differ.
func BenchmarkPayloadDecoders(b *testing.B) {
	data := encodedSample(b, 50)
	type item struct {
		line    []byte
		members []member
		typ     EventType
	}
	var items []item
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		members, ok := scanObject(line, nil, nil)
		if !ok {
			b.Fatalf("sample line does not scan: %s", line)
		}
		var typ EventType
		for _, m := range members {
			if string(m.key) == "type" {
				typ = EventType(m.val[1 : len(m.val)-1])
			}
		}
		items = append(items, item{line, members, typ})
	}
	for _, c := range payloadCandidates {
		b.Run(c.name, func(b *testing.B) {
			var p lineParser
			events := 0
			b.ReportAllocs()
			for b.Loop() {
				for _, it := range items {
					if err := c.decode(&p, it.line, it.members, it.typ); err != nil {
						b.Fatal(err)
					}
				}
				events += len(items)
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
