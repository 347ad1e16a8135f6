-- latency: per tool, percentiles of the calls' own durations (tool_end
-- duration_ms, never batch averages), interpolated with quantile_cont.
-- Denominator: calls_with_duration, the calls that have a tool_end.
SELECT tool,
       count(duration_ms) AS calls_with_duration,
       quantile_cont(duration_ms, 0.5) AS p50_ms,
       quantile_cont(duration_ms, 0.95) AS p95_ms,
       quantile_cont(duration_ms, 0.99) AS p99_ms
FROM tool_calls
WHERE duration_ms IS NOT NULL
GROUP BY tool
ORDER BY tool;
