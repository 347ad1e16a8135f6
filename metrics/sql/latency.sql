-- latency: per tool, percentiles of the latency of the calls that ran
-- (tool_calls.duration_ms: a call's own run time from its tool_end, never
-- a batch average; a call that did not run, or whose run time its source
-- did not measure, is no sample), interpolated with quantile_cont.
-- Denominator: calls_with_duration, the calls that ran with a measured
-- duration. Tools are labels (tool_label): a made-up name is
-- '(unknown tool)', and such a call never runs.
-- Percentiles are rounded to the microsecond, the precision recorded.
SELECT tool_label AS tool,
       count(duration_ms) AS calls_with_duration,
       round(quantile_cont(duration_ms, 0.5), 3) AS p50_ms,
       round(quantile_cont(duration_ms, 0.95), 3) AS p95_ms,
       round(quantile_cont(duration_ms, 0.99), 3) AS p99_ms
FROM tool_calls
WHERE duration_ms IS NOT NULL
GROUP BY tool_label
ORDER BY tool_label;
