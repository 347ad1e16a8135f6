-- definition_drift: one tool with two definitions.
-- Within a session: session_start's catalog names one tool twice with
-- different definition_hash values (error: the model is given two
-- definitions of one name); or a tool_search result line that is a
-- definition (a JSON object with a name and a description) gives a
-- catalog tool another description than session_start's recorded
-- definition (warning: the path that loads a deferred tool built it
-- differently from the catalog's). Across the corpus: sessions of the same
-- harness_version sent the same tool with different definitions
-- (warning, corpus-level: one of two paths that build a definition
-- changed it, and the sessions that got each are cited). Where the
-- definitions were recorded, the message gives the description sizes
-- and how much the shorter one lost. A session holding a name twice is
-- reported on its own and does not count for the corpus part; sessions
-- of different harness versions are not compared (a release may change a
-- definition on purpose).
-- tools holds no description, only its length: it is read three times,
-- and the descriptions of every tool of every session made it the largest
-- thing a detect held (hundreds of MB at 10M events). The descriptions
-- are taken again (catalog) for the sessions with a tool_search only.
WITH tools AS (
    SELECT s.session, s.file, s.line, s.seq, s.ts, s.harness_version,
           t.name, t.definition_hash AS hash,
           length(json_extract_string(t.definition, '$.description')) AS desc_bytes
    FROM raw_session_start s,
         unnest(from_json(s.tools, '[{"name":"VARCHAR","definition_hash":"VARCHAR","definition":"JSON"}]')) AS u(t)
), result_lines AS (
    -- Only lines that are JSON objects are parsed: CASE keeps the JSON
    -- functions away from the prose lines around them.
    SELECT r.session, r.turn, r.tool_use_id, r.file, r.line, r.seq,
           CASE WHEN starts_with(d.def, '{') AND json_valid(d.def) THEN d.def END AS def
    FROM raw_tool_result r, unnest(string_split(r.text, chr(10))) AS d(def)
    WHERE r.tool = 'tool_search'
), searched AS (
    SELECT session, turn, tool_use_id, file, line, seq,
           json_extract_string(def, '$.name') AS name,
           json_extract_string(def, '$.description') AS description
    FROM result_lines
    WHERE def IS NOT NULL AND json_extract_string(def, '$.description') IS NOT NULL
), catalog AS (
    SELECT s.session, s.file, s.line, s.seq, t.name,
           json_extract_string(t.definition, '$.description') AS description
    FROM (SELECT * FROM raw_session_start WHERE session IN (SELECT session FROM searched)) s,
         unnest(from_json(s.tools, '[{"name":"VARCHAR","definition_hash":"VARCHAR","definition":"JSON"}]')) AS u(t)
), loaded AS (
    SELECT q.*, t.file AS start_file, t.line AS start_line, t.seq AS start_seq,
           length(t.description) AS catalog_bytes, length(q.description) AS loaded_bytes
    FROM searched q JOIN catalog t USING (session, name)
    WHERE t.description IS NOT NULL AND t.description <> q.description
), twice AS (
    -- Only a name a catalog lists twice can have two hashes: the
    -- distinct counts below run over those alone, not over every tool of
    -- every session (they were most of this query's time).
    SELECT session, name FROM tools GROUP BY session, name HAVING count(*) >= 2
), dup AS (
    SELECT t.session, t.name, min(t.file) AS file, min(t.line) AS line, min(t.seq) AS seq,
           count(DISTINCT t.hash) AS hashes, string_agg(DISTINCT t.hash, ', ' ORDER BY t.hash) AS list
    FROM tools t
    JOIN twice w ON t.session IS NOT DISTINCT FROM w.session AND t.name IS NOT DISTINCT FROM w.name
    GROUP BY t.session, t.name
    HAVING count(DISTINCT t.hash) >= 2
), single AS (
    SELECT t.* FROM tools t ANTI JOIN dup d USING (session, name)
), hashes AS (
    SELECT harness_version, name, hash, count(*) AS n, min(ts) AS first_ts,
           arg_min(session, ts) AS first_session, arg_min(file, ts) AS file,
           arg_min(line, ts) AS line, arg_min(seq, ts) AS seq, max(desc_bytes) AS desc_bytes
    FROM single
    GROUP BY harness_version, name, hash
), drifting AS (
    SELECT harness_version, name FROM hashes GROUP BY harness_version, name HAVING count(*) >= 2
), per_hash AS (
    -- The sessions of each definition are listed for the tools that
    -- drift only: listed for every tool of every session, they were
    -- most of what a detect held at 10M events.
    SELECT h.*, l.sessions
    FROM hashes h JOIN drifting USING (harness_version, name)
    JOIN (SELECT harness_version, name, hash, list(session ORDER BY ts) AS sessions
          FROM single JOIN drifting USING (harness_version, name)
          GROUP BY harness_version, name, hash) l USING (harness_version, name, hash)
), drift AS (
    -- The definition fewer sessions hold comes first (then the later
    -- one): it is the odd one a person should open.
    SELECT harness_version, name, count(*) AS defs, sum(n) AS total,
           min(desc_bytes) AS shortest, max(desc_bytes) AS longest,
           string_agg(format('{} in {} session(s){}', hash, n,
                             CASE WHEN desc_bytes IS NULL THEN '' ELSE format(' (description {} bytes)', desc_bytes) END),
                      '; ' ORDER BY n, first_ts DESC, hash) AS summary,
           arg_min(first_session, (n, -epoch(first_ts), hash)) AS session,
           to_json(list({'file': file, 'line': line, 'seq': seq, 'type': 'session_start'} ORDER BY n, first_ts DESC, hash)) AS evidence,
           to_json(flatten(list(sessions ORDER BY n, first_ts DESC, hash))) AS sessions
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
SELECT session, turn, tool_use_id,
       format('tool_search gave {} a description of {} bytes at turn {}, the catalog''s definition has {} bytes{}: two paths built this tool''s definition',
              name, loaded_bytes, turn, catalog_bytes,
              CASE WHEN loaded_bytes < catalog_bytes
                   THEN format(' (the loaded one lost {}%)', round(100.0 * (catalog_bytes - loaded_bytes) / catalog_bytes, 1))
                   ELSE '' END) AS message,
       to_json([{'file': file, 'line': line, 'seq': seq, 'type': 'tool_result'},
                {'file': start_file, 'line': start_line, 'seq': start_seq, 'type': 'session_start'}]) AS evidence,
       'warning' AS severity, NULL AS sessions
FROM loaded
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
