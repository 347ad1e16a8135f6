package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/retrace-dev/retrace/otlp"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

// otlpExportOptions are export's OpenTelemetry flags.
type otlpExportOptions struct {
	url     string
	file    string
	headers []string
}

const otlpExportHelp = `

--otlp URL sends every session as an OpenTelemetry trace (OTLP/HTTP,
protobuf) to URL, a Collector, Jaeger, Tempo, Langfuse, Phoenix or any
OTLP receiver; a URL without a path gets /v1/traces, as
OTEL_EXPORTER_OTLP_ENDPOINT does. --otlp-header k=v adds a header (an
Authorization token, say), repeatable; header values are never printed.
--otlp-file FILE writes the same traces as OTLP/JSON instead (one
TracesData per line; - for stdout), which retrace import otlp reads back.
The spans follow the OTel GenAI semantic conventions 1.41: a root
invoke_agent span per session, chat spans for the model turns and
execute_tool spans whose duration is the tool's own duration_ms (a call
without a measured duration is a zero-length span flagged
retrace.tool.duration_unknown). Trace and span ids are derived from the
session, so exporting again sends the same ids. docs/otlp.md lists every
attribute. These flags read trajectories (not Parquet) and do not combine
with --parquet or --arrow; a trajectory that cannot be read is reported
(file:line) and the others are still exported, with exit code 2.`

const otlpExportExample = `
  retrace export --otlp http://localhost:4318 .retrace/runs
  retrace export --otlp https://otlp.example.com --otlp-header "Authorization=Bearer $TOKEN"
  retrace export --otlp-file traces.jsonl runs/`

// addOTLPExport adds the OTLP flags to the export command; with one of
// them set the command exports traces instead of Parquet or Arrow.
func addOTLPExport(cmd *cobra.Command, sys *IO, opts *exportOptions) {
	o := &otlpExportOptions{}
	cmd.Flags().StringVar(&o.url, "otlp", "", "OTLP/HTTP endpoint to send the sessions to as traces")
	cmd.Flags().StringVar(&o.file, "otlp-file", "", "file to write the sessions to as OTLP/JSON traces (- for stdout)")
	cmd.Flags().StringArrayVar(&o.headers, "otlp-header", nil, "header k=v sent with every OTLP request (repeatable; never printed)")
	cmd.Use = strings.Replace(cmd.Use, ")", " | --otlp URL | --otlp-file FILE)", 1)
	cmd.Short += ", or send them as OpenTelemetry traces"
	// The OTLP paragraph goes before the output and exit code notes.
	if i := strings.Index(cmd.Long, "\n\nWith --format json"); i >= 0 {
		cmd.Long = cmd.Long[:i] + otlpExportHelp + cmd.Long[i:]
	} else {
		cmd.Long += otlpExportHelp
	}
	cmd.Example += otlpExportExample
	inner := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if o.url == "" && o.file == "" {
			if len(o.headers) > 0 {
				return withJSONErrors(sys, opts.format, usage(errors.New("--otlp-header needs --otlp URL")))
			}
			return inner(c, args)
		}
		paths, err := opts.inputs(args)
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		opts.paths = paths
		return withJSONErrors(sys, opts.format, runOTLPExport(c.Context(), sys, opts, o))
	}
	addLabelPartition(cmd, sys, opts)
}

// otlpSummary is what an OTLP export prints with --format json.
type otlpSummary struct {
	OTLP otlpResult `json:"otlp"`
}

type otlpResult struct {
	Endpoint string `json:"endpoint,omitempty"`
	File     string `json:"file,omitempty"`
	otlp.Counts
	Accepted int      `json:"accepted_spans"`
	Requests int      `json:"requests"`
	Problems []string `json:"problems"`
}

func runOTLPExport(ctx context.Context, sys *IO, opts *exportOptions, o *otlpExportOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	switch {
	case opts.parquet != "" || opts.arrow != "":
		return usage(errors.New("--otlp and --otlp-file do not combine with --parquet or --arrow; run export once for each"))
	case o.url != "" && o.file != "":
		return usage(errors.New("give --otlp URL or --otlp-file FILE, not both"))
	case o.file == "-" && opts.format.value == "json":
		return usage(errors.New("--otlp-file - writes the traces to stdout, so the JSON summary cannot go there too; drop --format json"))
	}
	headers := map[string]string{}
	for i, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			// Nothing of it is shown: it may hold a secret.
			return usage(fmt.Errorf("--otlp-header number %d: want key=value, e.g. \"Authorization=Bearer $TOKEN\" (its text is not shown: it may hold a secret)", i+1))
		}
		headers[k] = v
	}
	paths := opts.paths
	if len(paths) == 0 {
		paths = []string{runsDir(sys)}
	}
	files, err := trajectory.Expand(paths...)
	if err != nil {
		return invalid(err)
	}
	if len(files) == 0 {
		return invalid(fmt.Errorf("no trajectory (*.jsonl) in %s", strings.Join(paths, ", ")))
	}
	res := otlpResult{Problems: []string{}}
	var send otlp.SendFunc
	var out *os.File
	switch {
	case o.url != "":
		u, err := otlp.TracesURL(o.url)
		if err != nil {
			return usage(fmt.Errorf("--otlp: %w", err))
		}
		res.Endpoint = u
		send = (&otlp.HTTPSender{URL: u, Headers: headers, Retries: 3}).Send
	case o.file == "-":
		res.File = "-"
		send = (&otlp.FileWriter{W: sys.Out}).Send
	default:
		res.File = o.file
		if out, err = createPrivate(o.file); err != nil {
			return invalid(fmt.Errorf("--otlp-file: %w", err))
		}
		send = (&otlp.FileWriter{W: out}).Send
	}
	bar := newCountProgress(sys, "exporting sessions", 50)
	rep, err := otlp.Export(ctx, otlp.Options{Files: files, Send: send, Progress: bar.update})
	bar.finish()
	if out != nil {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--otlp-file: %w", cerr)
		}
	}
	if err != nil {
		return err
	}
	res.Counts, res.Accepted, res.Requests = rep.Counts, rep.Accepted, rep.Requests
	for _, p := range rep.Problems {
		res.Problems = append(res.Problems, p.Error())
		if opts.format.value != "json" {
			fmt.Fprintln(sys.Err, p)
		}
	}
	dest := res.Endpoint
	if dest == "" {
		dest = res.File
	}
	if dest != "-" || opts.format.value == "json" {
		fmt.Fprintf(sys.Err, "sent %s as %s (%d chat, %d execute_tool, %d without a measured duration) to %s in %s\n",
			plural(rep.Sessions, "session"), plural(rep.Spans, "span"), rep.Chat, rep.Tool, rep.DurationUnknown, dest, plural(rep.Requests, "request"))
	}
	if opts.format.value == "json" {
		b, err := json.MarshalIndent(otlpSummary{OTLP: res}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(sys.Out, "%s\n", b)
	}
	if len(rep.Problems) > 0 {
		return &exitError{code: ExitInvalid, err: errReported}
	}
	return nil
}
