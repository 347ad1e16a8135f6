#!/bin/sh
# usage: run-codex.sh NAME SCRIPT PROMPT [codex exec args...]
set -e
name=$1 script=$2 prompt=$3; shift 3
d=/tmp/imp/$name; rm -rf $d; mkdir -p $d/home/.codex $d/ws $d/rec
cp -r /tmp/imp/wsfiles/. $d/ws/
cat > $d/home/.codex/config.toml <<EOT
model = "gpt-5-codex"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:8765/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
EOT
/tmp/imp/retrace mock serve --script $script --addr 127.0.0.1:8765 --record $d/rec >$d/mock.out 2>$d/mock.err &
mp=$!
sleep 1
cd $d/ws
HOME=$d/home CODEX_HOME=$d/home/.codex MOCK_API_KEY=sk-fake-mock-key \
 timeout 120 codex exec --skip-git-repo-check --json "$@" "$prompt" </dev/null >$d/out.jsonl 2>$d/err.txt || echo "codex rc=$?"
kill $mp; wait $mp 2>/dev/null || true
