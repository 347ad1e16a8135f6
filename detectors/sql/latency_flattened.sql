-- latency_flattened: a batch of two or more calls whose tool_end events
-- all report the same duration_ms, of min_duration_ms or more (a batch
-- total divided among the calls). Calls that never ran
-- (denied, blocked) have no latency and are left out; calls quicker than
-- min_duration_ms (two reads of a cached file) can meet to the
-- microsecond on their own. The flat batches are found first, so the evidence is
-- built for them alone.
WITH flat AS (
    -- duration_ms of tool_calls is the glossary's latency: only a call
    -- that ran and was measured has one. The batches are judged on the
    -- calls joined to their tool_end rows, as the evidence is, but
    -- without the evidence's columns: joined whole for every call and
    -- read twice, they were held whole (hundreds of MB at 10M events).
    SELECT c.session, c.turn, c.batch
    FROM tool_calls c
    JOIN raw_tool_end e USING (session, tool_use_id)
    WHERE c.duration_ms > 0
    GROUP BY c.session, c.turn, c.batch
    HAVING count(*) >= 2 AND min(c.duration_ms) = max(c.duration_ms) AND min(c.duration_ms) >= ${min_duration_ms}
), calls AS (
    SELECT c.session, c.turn, c.batch, c.tool_use_id, c.tool, c.duration_ms,
           e.file, e.line, e.seq
    FROM tool_calls c
    JOIN flat USING (session, turn, batch)
    JOIN raw_tool_end e USING (session, tool_use_id)
    WHERE c.duration_ms > 0
), batches AS (
    SELECT session, turn, batch, count(*) AS calls, min(duration_ms) AS ms,
           string_agg(tool, ', ' ORDER BY seq) AS tools,
           arg_min(tool_use_id, seq) AS first_call,
           to_json(list({'file': file, 'line': line, 'seq': seq, 'type': 'tool_end'} ORDER BY seq)) AS evidence,
           min(file) AS file, min(line) AS line
    FROM calls
    GROUP BY session, turn, batch
)
SELECT session, turn, first_call AS tool_use_id,
       format('the {} calls of batch {} in turn {} ({}) all report duration_ms {}; calls measured on their own never agree to the microsecond',
              calls, batch, turn, tools, ms) AS message,
       evidence
FROM batches
ORDER BY file, line;
