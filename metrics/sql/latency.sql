-- latency: per tool, percentiles of the calls' own durations (tool_end
-- duration_ms, never batch averages), interpolated with quantile_cont.
-- Denominator: calls_with_duration, the calls that have a tool_end.
-- Percentiles are rounded to the microsecond, the precision recorded.
SELECT tool,
       count(duration_ms) AS calls_with_duration,
       round(quantile_cont(duration_ms, 0.5), 3) AS p50_ms,
       round(quantile_cont(duration_ms, 0.95), 3) AS p95_ms,
       round(quantile_cont(duration_ms, 0.99), 3) AS p99_ms
FROM tool_calls
WHERE duration_ms IS NOT NULL
GROUP BY tool
ORDER BY tool;
