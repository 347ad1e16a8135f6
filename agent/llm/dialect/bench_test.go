package dialect

import (
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

// BenchmarkOpenAIStrictBuiltins rewrites all built-in schemas once per
// iteration, the work a provider does per request if it does not cache.
func BenchmarkOpenAIStrictBuiltins(b *testing.B) {
	var schemas [][]byte
	for _, tool := range tools.Builtins() {
		schemas = append(schemas, tool.Spec().Schema)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range schemas {
			if _, err := OpenAIStrict(s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(schemas)), "ns/schema")
}

func BenchmarkAnthropicBuiltins(b *testing.B) {
	var schemas [][]byte
	for _, tool := range tools.Builtins() {
		schemas = append(schemas, tool.Spec().Schema)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range schemas {
			if _, err := Anthropic(s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(schemas)), "ns/schema")
}
