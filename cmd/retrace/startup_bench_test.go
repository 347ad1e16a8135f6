package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkVersionStartup measures what every command pays before it does
// anything: `retrace version` run as a process, its package-init time as
// the runtime reports it (GODEBUG=inittrace=1) and the part of that spent
// in one package, santhosh-tekuri/jsonschema/v6, which compiles every
// draft's meta-schemas in its init. The baseline, in the same run, is a Go
// program that prints a line and exits.
func BenchmarkVersionStartup(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("no go toolchain to build retrace with")
	}
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "retrace")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	for _, c := range []struct{ name, bin string }{{"hello_baseline", hello}, {"retrace_version", bin}} {
		b.Run(c.name, func(b *testing.B) {
			var initMs, schemaMs float64
			for b.Loop() {
				cmd := exec.Command(c.bin, "version")
				cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatalf("%s version: %v, stdout %q\n%s", c.name, err, out, stderr.String())
				}
				total, schema := initTimes(b, stderr.String())
				initMs += total
				schemaMs += schema
			}
			n := float64(b.N)
			b.ReportMetric(float64(b.Elapsed())/n/1e6, "ms/op")
			b.ReportMetric(initMs/n, "init-ms/op")
			b.ReportMetric(schemaMs/n, "jsonschema-init-ms/op")
		})
	}
}

// initTimes sums the clock times N of GODEBUG=inittrace=1's lines ("init
// PKG @T ms, N ms clock, ...") and returns the total and jsonschema/v6's.
func initTimes(b *testing.B, trace string) (total, schema float64) {
	b.Helper()
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			b.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		total += ms
		if strings.HasPrefix(f[1], "github.com/santhosh-tekuri/jsonschema/") {
			schema += ms
		}
	}
	return total, schema
}
