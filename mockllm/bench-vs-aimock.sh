#!/bin/sh
# Compares retrace's mock server with aimock (npm @copilotkit/aimock, the
# pinned version below) under the same Go load generator: responses/s,
# p50/p99 latency, server CPU per response and server RSS, on the three
# wires (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses),
# JSON and SSE. Both servers are measured in the same run, and the run is
# repeated COUNT times; the summary gives, per wire, aimock's CPU per
# response over retrace's (higher is better for retrace), min and median
# of the runs. aimock is installed into a temporary directory for the run
# only (AIMOCK_DIR reuses a directory that has it).
#
#   mockllm/bench-vs-aimock.sh [CLIENTS] [REQUESTS] [COUNT]    (default 50 20000 3)
set -eu
clients=${1:-50}
requests=${2:-20000}
count=${3:-3}
version=1.43.0
dir=${AIMOCK_DIR:-$(mktemp -d)}
if [ ! -f "$dir/node_modules/@copilotkit/aimock/dist/cli.js" ]; then
	(cd "$dir" && npm install --no-audit --no-fund --silent "@copilotkit/aimock@$version" >/dev/null)
fi
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
AIMOCK_CLI="$dir/node_modules/@copilotkit/aimock/dist/cli.js" \
	go test ./mockllm/ -run '^$' -bench BenchmarkLoad -benchtime "${requests}x" -count "$count" \
	-load.clients "$clients" | tee "$out"
# Each line: BenchmarkLoad/WIRE/SERVER-P N ns/op V cpu-µs/resp ...; the
# k-th retrace line of a wire pairs with its k-th aimock line (same run).
awk '
/^BenchmarkLoad\// {
	split($1, p, "/"); wire = p[2]; server = p[3]; sub(/-[0-9]+$/, "", server)
	cpu = ""
	for (i = 2; i < NF; i++) if ($(i + 1) == "cpu-µs/resp") cpu = $i
	if (cpu == "") next
	if (!(wire in seen)) { seen[wire] = 1; order[++nw] = wire }
	k = ++n[wire, server]; v[wire, server, k] = cpu
}
END {
	printf "\ncpu-µs/resp, aimock over retrace (min / median of %d runs):\n", '"$count"'
	for (w = 1; w <= nw; w++) {
		wire = order[w]; m = 0
		for (k = 1; k <= n[wire, "retrace"] && k <= n[wire, "aimock"]; k++)
			if (v[wire, "retrace", k] > 0) r[++m] = v[wire, "aimock", k] / v[wire, "retrace", k]
		if (m == 0) { printf "  %-16s no aimock side\n", wire; continue }
		for (i = 2; i <= m; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
		printf "  %-16s %.2fx / %.2fx\n", wire, r[1], r[int((m + 1) / 2)]
	}
}' "$out"
