package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadSmallFile reads a 200-line source file, the most common
// call of a coding session.
func BenchmarkReadSmallFile(b *testing.B) {
	env := newTestEnv(b)
	var src strings.Builder
	for i := range 200 {
		fmt.Fprintf(&src, "\tx%d := compute(%d) // a typical line of Go source code\n", i, i)
	}
	writeFile(b, env.Workspace(), "main.go", src.String())
	input := mustJSON(b, readInput{FilePath: "main.go"})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := ReadTool{}.Run(ctx, env, input)
		if err != nil || res.IsError {
			b.Fatal(err, res.Output)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/read")
}

// BenchmarkGrepWorkspace searches a workspace of 500 files in 25
// directories, with a .gitignore, in files_with_matches mode.
func BenchmarkGrepWorkspace(b *testing.B) {
	env := newTestEnv(b)
	ws := env.Workspace()
	writeFile(b, ws, ".gitignore", "*.log\nvendor/\n")
	var body strings.Builder
	for i := range 100 {
		fmt.Fprintf(&body, "func f%d() int { return %d } // filler line for searching\n", i, i)
	}
	for d := range 25 {
		for f := range 20 {
			content := body.String()
			if f == 7 {
				content += "// NEEDLE here\n"
			}
			writeFile(b, ws, fmt.Sprintf("pkg%d/file%d.go", d, f), content)
		}
		writeFile(b, ws, fmt.Sprintf("pkg%d/debug.log", d), "NEEDLE ignored\n")
	}
	input := mustJSON(b, grepInput{Pattern: `NEEDLE`})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := GrepTool{}.Run(ctx, env, input)
		if err != nil || res.IsError || strings.Count(res.Output, "\n") != 25 {
			b.Fatal(err, res.Output)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/search")
	b.ReportMetric(500*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}
