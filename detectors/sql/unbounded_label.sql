-- unbounded_label: labels that carry data. A label value is
-- suspect when it holds a run of 6+ digits, of 8+ hex digits (ids,
-- hashes), 3+ dotted segments after the first (a path with its slashes
-- turned into dots) or more than max_length (32) characters; one finding per distinct
-- value, at its first event. A tool whose failures give more than
-- max_codes_per_tool (16) distinct error codes over the corpus is one corpus-level finding.
WITH labels AS (
    SELECT 'error_code' AS field, error_code AS value, session, turn, tool_use_id, tool, file, line, seq, type
    FROM raw_tool_failure WHERE error_code IS NOT NULL AND error_code <> ''
    UNION ALL
    SELECT 'error_code', error_code, session, turn, NULL, NULL, file, line, seq, type
    FROM raw_session_end WHERE error_code IS NOT NULL AND error_code <> ''
    UNION ALL
    SELECT 'hook', hook, session, turn, tool_use_id, tool, file, line, seq, type FROM raw_hook_run
    UNION ALL
    SELECT 'kind', kind, session, turn, NULL, NULL, file, line, seq, type FROM raw_reminder
), suspect AS (
    SELECT field, value, count(*) AS uses, count(DISTINCT session) AS sessions,
           arg_min(session, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS session,
           arg_min(turn, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS turn,
           arg_min(tool_use_id, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS tool_use_id,
           arg_min({'file': file, 'line': line, 'seq': seq, 'type': type}, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS ev,
           min(file) AS file, min(line) AS line
    FROM labels
    WHERE regexp_matches(value, '[0-9]{6,}|[0-9a-fA-F]{8,}|^[^.]*(\.[^.]+){3,}$') OR length(value) > ${max_length}
    GROUP BY field, value
), spread AS (
    SELECT tool, count(DISTINCT value) AS codes, min(value) AS example,
           to_json(list(DISTINCT session ORDER BY session)) AS sessions,
           arg_min(session, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS session,
           arg_min({'file': file, 'line': line, 'seq': seq, 'type': type}, file || lpad(CAST(line AS VARCHAR), 12, '0')) AS ev
    FROM labels WHERE field = 'error_code' AND tool IS NOT NULL
    GROUP BY tool
    HAVING count(DISTINCT value) > ${max_codes_per_tool}
)
SELECT session, turn, tool_use_id,
       format('{} {} looks like it carries data (used {} times in {} sessions); a label must come from a closed set', field, to_json(value), uses, sessions) AS message,
       to_json([ev]) AS evidence, NULL AS sessions
FROM suspect
UNION ALL
SELECT session, 0, NULL,
       format('{} failures give {} distinct error codes over the corpus (max_codes_per_tool ${max_codes_per_tool}), e.g. {}', tool, codes, to_json(example)),
       to_json([ev]), sessions
FROM spread
ORDER BY 1, 2;
