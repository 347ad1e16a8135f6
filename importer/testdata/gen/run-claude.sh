#!/bin/sh
# usage: run-claude.sh NAME SCRIPT PROMPT [claude args...]
set -e
name=$1 script=$2 prompt=$3; shift 3
d=/tmp/imp/$name; rm -rf $d; mkdir -p $d/home $d/ws $d/rec
cp -r /tmp/imp/wsfiles/. $d/ws/ 2>/dev/null || true
/tmp/imp/retrace mock serve --script $script --addr 127.0.0.1:8765 --record $d/rec >$d/mock.out 2>$d/mock.err &
mp=$!
sleep 1
cd $d/ws
HOME=$d/home ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-ant-api03-fakefakefake \
 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
 timeout 120 claude -p "$prompt" --output-format stream-json --verbose "$@" >$d/out.jsonl 2>$d/err.txt || echo "claude rc=$?"
kill $mp; wait $mp 2>/dev/null || true
