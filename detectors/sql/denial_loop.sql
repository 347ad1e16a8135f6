-- denial_loop: the same tool with the same input denied min_denials or more times
-- in a session (denials by the fuse itself do not count), with no
-- denial_fuse defense_trigger after the first of them.
WITH denials AS (
    SELECT d.session, d.turn, d.tool_use_id, d.tool, CAST(c.input AS VARCHAR) AS input,
           d.file, d.line, d.seq
    FROM raw_permission_deny d
    JOIN raw_tool_call c USING (session, tool_use_id)
    WHERE d.source <> 'fuse'
), loops AS (
    SELECT session, tool, input, count(*) AS denials, min(seq) AS first_seq,
           min(turn) AS turn, arg_min(tool_use_id, seq) AS first_call,
           to_json(list({'file': file, 'line': line, 'seq': seq, 'type': 'permission_deny'} ORDER BY seq)) AS evidence,
           min(file) AS file, min(line) AS line
    FROM denials
    GROUP BY session, tool, input
    HAVING count(*) >= ${min_denials}
), fused AS (
    SELECT session, seq FROM raw_defense_trigger WHERE defense = 'denial_fuse'
)
SELECT l.session, l.turn, l.first_call AS tool_use_id,
       format('{} was denied {} times with the same input (min_denials ${min_denials}) and the denial fuse never acted', l.tool, l.denials) AS message,
       l.evidence
FROM loops l
WHERE NOT EXISTS (SELECT 1 FROM fused f WHERE f.session = l.session AND f.seq > l.first_seq)
ORDER BY l.file, l.line;
