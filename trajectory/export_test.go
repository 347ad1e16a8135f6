package trajectory

// UseReferenceDecoder makes dec decode every payload with the reference
// encoding/json path, the baseline of the benchmarks and the oracle of the
// differential fuzz test.
func UseReferenceDecoder(dec *Decoder) { dec.parser.reference = true }
