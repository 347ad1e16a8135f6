package metrics

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// A file checked in parts must give exactly what checking it whole gives:
// the same events, and the same line numbers in errors and warnings.
func TestCheckingInPartsEqualsCheckingWhole(t *testing.T) {
	basic, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(basic), "\n"), "\n")
	// Many sessions' worth of lines, with each copy's session renamed.
	var body strings.Builder
	for i := range 40 {
		for _, l := range lines {
			body.WriteString(strings.ReplaceAll(l, "20261130-090000.000-1a2b3c4d", fmt.Sprintf("20261130-090000.000-%08x", i)))
		}
		if !strings.HasSuffix(body.String(), "\n") {
			body.WriteString("\n")
		}
	}
	good := body.String()
	n := strings.Count(good, "\n")
	at := func(line int, with string) string {
		ls := strings.SplitAfter(good, "\n")
		ls[line-1] = with + "\n"
		return strings.Join(ls, "")
	}
	// repeatAtCuts repeats the line that ends where each given part of the
	// file begins (with parts of 1 KiB) as the first line of that part,
	// where the part checked alone cannot see the seq it repeats.
	repeatAtCuts := func(parts ...int) string {
		oldPart := partSize
		partSize = 1 << 10
		defer func() { partSize = oldPart }()
		p := filepath.Join(t.TempDir(), "cuts.jsonl")
		if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
		cuts, _, err := cutPoints(p, 0, int64(len(good)))
		if err != nil || len(cuts) <= 3 {
			t.Fatalf("cut points %v, err %v", cuts, err)
		}
		out := good
		// From the last cut back, so the earlier cuts stay where they are.
		for i := len(parts) - 1; i >= 0; i-- {
			cut := int(cuts[parts[i]])
			prev := strings.LastIndexByte(out[:cut-1], '\n') + 1
			out = out[:cut] + out[prev:cut] + out[cut:]
		}
		return out
	}
	for _, tc := range []struct{ name, content string }{
		{"A valid file of 440 lines.", good},
		{"A line repeated where a part begins.", repeatAtCuts(2)},
		{"A line repeated where two parts begin.", repeatAtCuts(1, 3)},
		{"A line repeated in the middle of a part.", at(n/2, strings.SplitAfter(good, "\n")[n/2-2])},
		{"A malformed line near the end.", at(n-7, `{"v":1,"session":`)},
		{"A malformed line in the middle.", at(n/2, `not json`)},
		{"A byte order mark opening a line in the middle.", at(n/2+1, "\xef\xbb\xbf"+strings.TrimSuffix(lines[3], "\n"))},
		{"A torn last line.", good + `{"v":1,"session":"x","se`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "big.jsonl")
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, lenient := range []bool{false, true} {
				whole, wholeErr, wholeEvents := loadWith(t, p, lenient, 1<<40)
				parts, partsErr, partsEvents := loadWith(t, p, lenient, 1<<10)
				if fmt.Sprint(wholeErr) != fmt.Sprint(partsErr) {
					t.Fatalf("lenient=%v: error in parts\n%v\nwhole\n%v", lenient, partsErr, wholeErr)
				}
				if fmt.Sprint(whole) != fmt.Sprint(parts) {
					t.Fatalf("lenient=%v: report in parts\n%+v\nwhole\n%+v", lenient, parts, whole)
				}
				if !reflect.DeepEqual(wholeEvents, partsEvents) {
					t.Fatalf("lenient=%v: the events differ (%d in parts, %d whole)", lenient, len(partsEvents), len(wholeEvents))
				}
			}
		})
	}
}

// loadWith loads file with parts of partBytes (when the file is larger than
// one part) and returns the report, the error and the events.
func loadWith(t *testing.T, file string, lenient bool, partBytes int64) (LoadReport, error, []string) {
	t.Helper()
	oldAbove, oldPart := splitAbove, partSize
	splitAbove, partSize = partBytes, partBytes
	defer func() { splitAbove, partSize = oldAbove, oldPart }()
	db := open(t, Options{Lenient: lenient})
	rep, err := db.Load(context.Background(), file)
	return rep, err, rows(t, db, "select * from events order by session, seq")
}

// FuzzCheckingInPartsEqualsCheckingWhole checks, on any input, that a file
// checked in parts gives what checking it whole gives, strict and lenient:
// the same error, report and events, whatever lines repeat where a part
// begins. Each exec loads into DuckDB four times; run it with
// -fuzzminimizetime 10x, as FuzzLenientLoad.
func FuzzCheckingInPartsEqualsCheckingWhole(f *testing.F) {
	basic, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(basic), "\n")
	f.Add(basic)
	f.Add([]byte(strings.Join(lines[:5], "") + lines[4] + strings.Join(lines[5:], "")))
	f.Add([]byte(strings.Join(lines[:7], "") + strings.Join(lines[2:], "")))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, lenient := range []bool{false, true} {
			whole, wholeErr, wholeEvents := loadWith(t, p, lenient, 1<<40)
			parts, partsErr, partsEvents := loadWith(t, p, lenient, 1<<8)
			if fmt.Sprint(wholeErr) != fmt.Sprint(partsErr) {
				t.Fatalf("lenient=%v: error in parts\n%v\nwhole\n%v", lenient, partsErr, wholeErr)
			}
			if fmt.Sprint(whole) != fmt.Sprint(parts) {
				t.Fatalf("lenient=%v: report in parts\n%+v\nwhole\n%+v", lenient, parts, whole)
			}
			if !reflect.DeepEqual(wholeEvents, partsEvents) {
				t.Fatalf("lenient=%v: the events differ (%d in parts, %d whole)", lenient, len(partsEvents), len(wholeEvents))
			}
		}
	})
}

// Every event carries the line of the file it was read from, counted as
// the trajectory Decoder counts them, whether the file is checked whole or
// in parts, so that a finding can point a person at the line.
func TestEventsCarryTheirLineInTheFile(t *testing.T) {
	basic, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Many copies of the sessions, with blank lines that shift the count
	// from the seq, so a line equal to the seq by chance cannot pass.
	var body strings.Builder
	for i := range 30 {
		body.WriteString("\n")
		body.WriteString(strings.ReplaceAll(string(basic), "20261130-090000.000-1a2b3c4d", fmt.Sprintf("20261130-090000.000-%08x", i)))
	}
	p := filepath.Join(t.TempDir(), "lines.jsonl")
	if err := os.WriteFile(p, []byte(body.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var want []string
	dec := trajectory.NewDecoder(fh, p)
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		want = append(want, fmt.Sprintf("%s|%d|%d", ev.Session, ev.Seq, dec.Line()))
	}
	if len(want) < 100 {
		t.Fatalf("only %d events decoded", len(want))
	}
	for _, partBytes := range []int64{1 << 40, 1 << 10} {
		oldAbove, oldPart := splitAbove, partSize
		splitAbove, partSize = partBytes, partBytes
		db := open(t, Options{}, p)
		splitAbove, partSize = oldAbove, oldPart
		got := rows(t, db, "select session, seq, line from events order by line")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parts of %d bytes: lines\n%v\nwant\n%v", partBytes, got[:5], want[:5])
		}
	}
}
