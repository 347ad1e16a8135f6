-- definition_drift: one tool with two definitions (seed §13.11, F11).
-- Within a session: session_start's catalog names one tool twice with
-- different definition_hash values (error: the model is given two
-- definitions of one name). Across the corpus: sessions of the same
-- harness_version sent the same tool with different definitions
-- (warning, corpus-level: one of two paths that build a definition
-- changed it, and the sessions that got each are cited). Where the
-- definitions were recorded, the message gives the description sizes
-- and how much the shorter one lost. A session holding a name twice is
-- reported on its own and does not count for the corpus part; sessions
-- of different harness versions are not compared (a release may change a
-- definition on purpose).
WITH tools AS (
    SELECT s.session, s.file, s.line, s.seq, s.ts, s.harness_version,
           t.name, t.definition_hash AS hash,
           length(json_extract_string(t.definition, '$.description')) AS desc_bytes
    FROM raw_session_start s,
         unnest(from_json(s.tools, '[{"name":"VARCHAR","definition_hash":"VARCHAR","definition":"JSON"}]')) AS u(t)
), dup AS (
    SELECT session, name, min(file) AS file, min(line) AS line, min(seq) AS seq,
           count(DISTINCT hash) AS hashes, string_agg(DISTINCT hash, ', ') AS list
    FROM tools
    GROUP BY session, name
    HAVING count(DISTINCT hash) >= 2
), single AS (
    SELECT t.* FROM tools t ANTI JOIN dup d USING (session, name)
), per_hash AS (
    SELECT harness_version, name, hash, count(*) AS n, min(ts) AS first_ts,
           arg_min(session, ts) AS first_session, arg_min(file, ts) AS file,
           arg_min(line, ts) AS line, arg_min(seq, ts) AS seq, max(desc_bytes) AS desc_bytes,
           list(session ORDER BY ts) AS sessions
    FROM single
    GROUP BY harness_version, name, hash
), drift AS (
    -- The definition fewer sessions hold comes first (then the later
    -- one): it is the odd one a person should open.
    SELECT harness_version, name, count(*) AS defs, sum(n) AS total,
           min(desc_bytes) AS shortest, max(desc_bytes) AS longest,
           string_agg(format('{} in {} session(s){}', hash, n,
                             CASE WHEN desc_bytes IS NULL THEN '' ELSE format(' (description {} bytes)', desc_bytes) END),
                      '; ' ORDER BY n, first_ts DESC) AS summary,
           arg_min(first_session, (n, -epoch(first_ts))) AS session,
           to_json(list({'file': file, 'line': line, 'seq': seq, 'type': 'session_start'} ORDER BY n, first_ts DESC)) AS evidence,
           to_json(flatten(list(sessions ORDER BY n, first_ts DESC))) AS sessions
    FROM per_hash
    GROUP BY harness_version, name
    HAVING count(*) >= 2
)
SELECT session, 0 AS turn, NULL AS tool_use_id,
       format('the session''s catalog defines {} {} times with different definition_hash values ({}): the model is given two definitions of one name',
              name, hashes, list) AS message,
       to_json([{'file': file, 'line': line, 'seq': seq, 'type': 'session_start'}]) AS evidence,
       'error' AS severity, NULL AS sessions
FROM dup
UNION ALL
SELECT session, 0 AS turn, NULL AS tool_use_id,
       format('{} has {} definitions among the {} sessions of harness {}: {}{}',
              name, defs, total, harness_version, summary,
              CASE WHEN shortest IS NOT NULL AND longest > 0 AND shortest < longest
                   THEN format('; the shorter description lost {}% of the longer one''s bytes', round(100.0 * (longest - shortest) / longest, 1))
                   ELSE '' END) AS message,
       evidence, 'warning' AS severity, sessions
FROM drift
ORDER BY 1, 4;
