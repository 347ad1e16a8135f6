-- parallelism: how the calls were batched: a batch is the
-- calls of one model response that the executor ran together (tool_call
-- batch, per session and turn); a batch of more than one call ran them in
-- parallel. cascade_cancellations counts the calls cancelled because a
-- sibling bash call of the batch failed (failure_kind aborted, error_code
-- sibling_failed).
-- Denominators: mean_calls_per_batch and max_calls_per_batch are over
-- batches; parallel_share = calls_in_parallel_batches / calls, over every
-- tool_call; cascade_cancellations is a count of calls.
WITH batches AS (
    SELECT session, turn, batch, count(*) AS calls
    FROM tool_calls GROUP BY session, turn, batch
)
SELECT count(*) AS batches,
       coalesce(sum(calls), 0) AS calls,
       round(avg(calls), 2) AS mean_calls_per_batch,
       max(calls) AS max_calls_per_batch,
       count(*) FILTER (WHERE calls > 1) AS parallel_batches,
       coalesce(sum(calls) FILTER (WHERE calls > 1), 0) AS calls_in_parallel_batches,
       round(coalesce(sum(calls) FILTER (WHERE calls > 1), 0) / nullif(sum(calls), 0), 4) AS parallel_share,
       (SELECT count(*) FROM tool_calls WHERE failure_kind = 'aborted' AND error_code = 'sibling_failed') AS cascade_cancellations
FROM batches;
