//go:build goexperiment.jsonv2

package trajectory

import jsonv2 "encoding/json/v2"

// With GOEXPERIMENT=jsonv2, BenchmarkPayloadDecoders also measures
// encoding/json/v2, strict as the contract wants it: unknown members
// rejected (duplicate names and invalid UTF-8 it rejects by default).
func init() {
	payloadCandidates = append(payloadCandidates, payloadCandidate{"json_v2", func(p *lineParser, line []byte, members []member, typ EventType) error {
		fields := payloadFieldsOf(typ)
		p.scratch = append(p.scratch[:0], '{')
		for _, m := range members {
			if isEnvelopeKey(m.key) || !fields.allowed[string(m.key)] {
				continue
			}
			if len(p.scratch) > 1 {
				p.scratch = append(p.scratch, ',')
			}
			p.scratch = append(p.scratch, line[m.start:m.end]...)
		}
		p.scratch = append(p.scratch, '}')
		if err := jsonv2.Unmarshal(p.scratch, newPayload(typ), jsonv2.RejectUnknownMembers(true)); err != nil {
			return err
		}
		for _, req := range fields.required {
			if !hasMember(members, req) {
				return &FieldError{Field: req, Err: ErrMissingField}
			}
		}
		return nil
	}})
}
