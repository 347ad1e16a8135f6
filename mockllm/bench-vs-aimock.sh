#!/bin/sh
# Compares retrace's mock server with aimock (npm @copilotkit/aimock) under
# the same Go load generator: responses/s, p50/p99 latency, server CPU per
# response and server RSS, for Anthropic Messages and OpenAI Chat, JSON and
# SSE. aimock is installed into a temporary directory for the run only.
#
#   mockllm/bench-vs-aimock.sh [CLIENTS] [REQUESTS]    (default 50 20000)
set -eu
clients=${1:-50}
requests=${2:-20000}
dir=${AIMOCK_DIR:-$(mktemp -d)}
if [ ! -f "$dir/node_modules/@copilotkit/aimock/dist/cli.js" ]; then
	(cd "$dir" && npm install --no-audit --no-fund --silent @copilotkit/aimock >/dev/null)
fi
cd "$(dirname "$0")/.."
AIMOCK_CLI="$dir/node_modules/@copilotkit/aimock/dist/cli.js" \
	go test ./mockllm/ -run '^$' -bench BenchmarkLoad -benchtime "${requests}x" -load.clients "$clients"
