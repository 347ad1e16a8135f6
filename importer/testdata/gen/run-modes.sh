#!/bin/sh
# usage: run-modes.sh cc|cx NAME SCRIPT   (inside unshare -n)
set -u
ip link set lo up
kind=$1 name=$2 script=$3
d=/tmp/cls/$name; rm -rf $d; mkdir -p $d/home/.codex $d/ws $d/rec
cp -r /tmp/cls/wsfiles/. $d/ws/
sed "s#WS/#$d/ws/#g" $script > $d/script.yaml
/tmp/cls/retrace mock serve --script $d/script.yaml --addr 127.0.0.1:8765 --record $d/rec >$d/mock.out 2>$d/mock.err &
mp=$!
sleep 1
cd $d/ws
if [ $kind = cc ]; then
HOME=$d/home ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-ant-api03-fakefakefake CLAUDE_CODE_MAX_RETRIES=0 \
 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
 timeout 200 claude -p "check the notes" --output-format stream-json --verbose --model claude-sonnet-4-5 --permission-mode default \
   --allowedTools "Read" "Bash(wc:*)" "Bash(cat:*)" "Bash(seq:*)" >$d/out.jsonl 2>$d/err.txt || echo "claude rc=$?"
else
HOME=$d/home CODEX_HOME=$d/home/.codex OPENAI_API_KEY=sk-offline-test \
 timeout 200 codex exec --skip-git-repo-check -s read-only -m gpt-5-codex \
  -c model_provider=mock -c 'model_providers.mock={name="mock",base_url="http://127.0.0.1:8765/v1",env_key="OPENAI_API_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}' \
  --json "check the notes" </dev/null >$d/out.jsonl 2>$d/err.txt || echo "codex rc=$?"
fi
kill -INT $mp; wait $mp 2>/dev/null || true
