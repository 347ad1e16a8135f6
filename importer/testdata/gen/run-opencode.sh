#!/bin/sh
# usage: run-oc.sh NAME SCRIPT PROMPT (inside unshare -n)
set -u
ip link set lo up
name=$1 script=$2 prompt=$3
d=/tmp/cls/oc/$name; rm -rf $d; mkdir -p $d/home $d/ws $d/rec
cp -r /tmp/cls/wsfiles/. $d/ws/
sed "s#WS/#$d/ws/#g" $script > $d/script.yaml
cat > $d/ws/opencode.json <<EOT
{"\$schema":"https://opencode.ai/config.json","model":"anthropic/claude-sonnet-4-5","small_model":"anthropic/claude-sonnet-4-5",
 "provider":{"anthropic":{"options":{"baseURL":"http://127.0.0.1:8765/v1","apiKey":"sk-ant-api03-fake"}}},
 "share":"disabled","autoupdate":false,"permission":{"edit":"ask","bash":"allow"}}
EOT
/tmp/cls/retrace2 mock serve --script $d/script.yaml --addr 127.0.0.1:8765 --record $d/rec >$d/mock.out 2>$d/mock.err &
mp=$!
sleep 1
cd $d/ws
HOME=$d/home XDG_DATA_HOME=$d/home/.local/share XDG_CONFIG_HOME=$d/home/.config XDG_CACHE_HOME=$d/home/.cache OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
 timeout 90 opencode run --format json "$prompt" </dev/null >$d/out.jsonl 2>$d/err.txt || echo "opencode rc=$?"
sid=$(grep -o '"sessionID":"[^"]*"' $d/out.jsonl | head -1 | cut -d'"' -f4)
HOME=$d/home XDG_DATA_HOME=$d/home/.local/share XDG_CONFIG_HOME=$d/home/.config XDG_CACHE_HOME=$d/home/.cache OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
 timeout 60 opencode export $sid </dev/null >$d/export.json 2>$d/export.err || echo "export rc=$?"
kill -INT $mp; wait $mp 2>/dev/null || true
