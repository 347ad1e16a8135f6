-- One row per model_response, its usage unpacked (doc.go lists the
-- columns). The usage is parsed once per row (json_transform), not once
-- per token count.
WITH r AS (
    SELECT session, turn, stop_reason, duration_ms, ttft_ms,
           json_transform(usage, '{"input_tokens": "BIGINT", "output_tokens": "BIGINT", "cache_read_tokens": "BIGINT", "cache_creation_tokens": "BIGINT"}') AS u
    FROM raw_model_response
)
SELECT session, turn, stop_reason,
       u.input_tokens + u.cache_read_tokens + u.cache_creation_tokens AS context_tokens,
       u.input_tokens AS input_tokens, u.output_tokens AS output_tokens,
       u.cache_read_tokens AS cache_read_tokens, u.cache_creation_tokens AS cache_creation_tokens,
       duration_ms, ttft_ms
FROM r
