package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// Limits of read. read is never truncated by the executor (a spilled read
// result would tell the model to read the spill file, which would spill
// again and loop), so read bounds itself.
const (
	// readDefaultLimit is the most lines one call shows.
	readDefaultLimit = 2000
	// readMaxLineLen is the most characters shown of one line.
	readMaxLineLen = 2000
	// readMaxOutput is the most bytes of numbered lines one call returns;
	// past it the call stops early and says how to continue.
	readMaxOutput = 256 << 10
)

type readInput struct {
	FilePath string `json:"file_path" jsonschema:"minLength=1" jsonschema_description:"The file to read: an absolute path, or a path relative to the workspace."`
	Offset   int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"The line number to start at (1-based). Only give it for files too long to read at once."`
	Limit    int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"The most lines to show (default and maximum 2000). Only give it for files too long to read at once."`
}

// ReadTool is the read built-in: a text file's lines, numbered.
type ReadTool struct{}

var readSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "read",
		Description: "Reads a text file and returns its lines numbered like cat -n (number, tab, line). " +
			"Use it instead of cat, head or tail in bash. It shows at most 2000 lines per call and cuts lines longer than 2000 characters; " +
			"when it shows only part of a file, the output ends with the line range shown, the total number of lines and the offset to continue from. " +
			"You must read a file before you edit it. Binary files are refused; directories are listed with ls, not read.",
		Schema:      SchemaFor[readInput](),
		ReadOnly:    true,
		Display:     trajectory.DisplayFull,
		ResultLimit: 0,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(the tool succeeded with no output)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns read's declarations.
func (ReadTool) Spec() Spec { return readSpec() }

// ConcurrencySafe reports true: reading never conflicts with other reads.
func (ReadTool) ConcurrencySafe(json.RawMessage) bool { return true }

// Paths returns the file the call reads.
func (ReadTool) Paths(input json.RawMessage) []Access {
	in, err := decode[readInput](input)
	if err != nil {
		return nil
	}
	return []Access{{Path: in.FilePath}}
}

// Run reads the file. On success its Modify marks the file as read, which
// edit requires.
func (ReadTool) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[readInput](input)
	if err != nil {
		return invalidInput("read", err), nil
	}
	if in.Offset < 0 || in.Limit < 0 {
		return Result{IsError: true, ErrorCode: "invalid_input",
			Output: "offset and limit must be positive line counts; leave both out to read the file from the start."}, nil
	}
	tg, err := env.Resolve(in.FilePath)
	if err != nil {
		return resolveError(err, in.FilePath), nil
	}
	abs := tg.Path
	info, err := env.root.Stat(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	if info.IsDir() {
		return Result{IsError: true, ErrorCode: "EISDIR",
			Output: abs + " is a directory, not a file. Use ls to list it, or glob to find files in it."}, nil
	}
	if !info.Mode().IsRegular() {
		// A device, FIFO or socket may never end (/dev/zero) or block for
		// ever (a FIFO without a writer).
		return Result{IsError: true, ErrorCode: "not_regular",
			Output: abs + " is not a regular file (it is a device, pipe or socket), so read cannot show it. Use bash if you really need to look at it, with a command that stops, such as head -c 1000."}, nil
	}
	f, err := env.root.Open(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 2*sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fsError(err, abs), nil
	}
	if isBinary(head) {
		return Result{IsError: true, ErrorCode: "binary",
			Output: abs + " is a binary file (it contains NUL bytes), so read cannot show it as text. " +
				"If you need to inspect it, use bash with a tool made for it (file, xxd | head, strings, or a format-specific tool)."}, nil
	}
	markRead := func(e *Env) { e.MarkRead(abs) }

	start := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 || limit > readDefaultLimit {
		limit = readDefaultLimit
	}
	var out strings.Builder
	out.Grow(int(min(info.Size()+info.Size()/4+64, readMaxOutput)))
	total, last := 0, 0
	full := false // stopped early because the output grew too big
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		line, more, err := readLine(br, readMaxLineLen)
		if err != nil && !errors.Is(err, io.EOF) {
			return fsError(err, abs), nil
		}
		if !more {
			break
		}
		total++
		if total < start || total >= start+limit || full {
			continue
		}
		if out.Len()+len(line)+16 > readMaxOutput && last >= start {
			full = true
			continue
		}
		writeNumbered(&out, total, line)
		last = total
	}

	switch {
	case total == 0:
		return Result{Output: abs + " is empty (0 lines).", Modify: markRead}, nil
	case start > total:
		return Result{IsError: true, ErrorCode: "offset_past_end",
			Output: fmt.Sprintf("offset %d is past the end of %s, which has %d lines. Call read again with an offset from 1 to %d, or without offset.",
				start, abs, total, total)}, nil
	}
	if start > 1 || last < total {
		out.WriteString(readHint(start, last, total, in.Offset != 0 || in.Limit != 0, full))
	}
	return Result{Output: out.String(), Modify: markRead}, nil
}

// readHint tells the model that it saw only part of the file: which lines
// of how many, and how to continue. When the model pages
// through a file short enough to read at once, it says so, because every
// extra call resends everything before it.
func readHint(first, last, total int, paged, full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n(Showing lines %d-%d of %d.", first, last, total)
	switch {
	case last < total && full:
		fmt.Fprintf(&b, " The output reached read's size limit. To continue, call read with offset=%d.", last+1)
	case last < total:
		fmt.Fprintf(&b, " To continue, call read with offset=%d.", last+1)
	default:
		b.WriteString(" This is the end of the file.")
	}
	if paged && total <= readDefaultLimit && !full {
		fmt.Fprintf(&b, " The whole file has only %d lines: read it in one call without offset and limit instead of in parts.", total)
	}
	b.WriteString(")\n")
	return b.String()
}

// writeNumbered writes one line as cat -n does ("%6d\t%s\n") without the
// cost of fmt, which dominated reading a small file.
func writeNumbered(b *strings.Builder, n int, line string) {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		b.WriteByte(' ')
	}
	b.Write(digits)
	b.WriteByte('\t')
	b.WriteString(line)
	b.WriteByte('\n')
}

// readLine reads one line without its newline, keeping at most maxRunes
// characters and marking the cut, so that a huge minified line costs
// neither memory nor context. more is false at the end of the input.
func readLine(br *bufio.Reader, maxRunes int) (line string, more bool, err error) {
	var kept []byte
	keptRunes, dropped := 0, 0
	for first := true; ; first = false {
		chunk, err := br.ReadSlice('\n')
		if first && !errors.Is(err, bufio.ErrBufferFull) {
			// The common case: the whole line came in one piece.
			text := trimNewline(chunk, err == nil)
			if len(text) <= maxRunes && utf8.Valid(text) {
				return string(text), len(chunk) > 0, err
			}
		}
		if len(chunk) > 0 {
			more = true
		}
		chunk = trimNewline(chunk, err == nil)
		if keptRunes < maxRunes {
			take := chunk
			if n := utf8.RuneCount(take); keptRunes+n > maxRunes {
				take = prefixRunes(take, maxRunes-keptRunes)
			}
			kept = append(kept, take...)
			keptRunes += utf8.RuneCount(take)
			dropped += utf8.RuneCount(chunk[len(take):])
		} else {
			dropped += utf8.RuneCount(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = strings.ToValidUTF8(string(kept), "\uFFFD")
		if dropped > 0 {
			line += fmt.Sprintf("… [line cut: %d more characters]", dropped)
		}
		return line, more, err
	}
}

// trimNewline drops the line terminator from a chunk that ended one.
func trimNewline(chunk []byte, ended bool) []byte {
	if ended && len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
		return chunk[:len(chunk)-1]
	}
	return chunk
}

// prefixRunes returns the first n characters of b.
func prefixRunes(b []byte, n int) []byte {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b[:i]
}
