#!/usr/bin/env python3
"""Scrub a real client transcript for commit: replace the throwaway paths of
the generating run with neutral ones and cut long strings (system prompts,
skill listings, tool definitions) to a marker, keeping every record, field
and record type as the client wrote it. Usage: scrub.py RUNDIR < in > out"""
import json, sys
run = sys.argv[1].rstrip('/')
def cut(v):
    if isinstance(v, str):
        v = v.replace(run + '/ws', '/home/user/project').replace(run + '/home', '/home/user').replace(run, '/home/user/run')
        return v if len(v) <= 600 else v[:200] + '[scrubbed: %d bytes cut]' % (len(v) - 200)
    if isinstance(v, list):
        return [cut(x) for x in v]
    if isinstance(v, dict):
        return {k: cut(x) for k, x in v.items()}
    return v
for line in sys.stdin:
    # Path strings inside JSON keys (project dir names) are rewritten too.
    o = json.loads(line)
    sys.stdout.write(json.dumps(cut(o), ensure_ascii=False, separators=(',', ':')) + '\n')
