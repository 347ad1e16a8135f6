-- One row per model_response, its usage unpacked (doc.go lists the
-- columns).
SELECT session, turn, stop_reason,
       CAST(usage->>'input_tokens' AS BIGINT) + CAST(usage->>'cache_read_tokens' AS BIGINT)
           + CAST(usage->>'cache_creation_tokens' AS BIGINT) AS context_tokens,
       CAST(usage->>'input_tokens' AS BIGINT) AS input_tokens,
       CAST(usage->>'output_tokens' AS BIGINT) AS output_tokens,
       CAST(usage->>'cache_read_tokens' AS BIGINT) AS cache_read_tokens,
       CAST(usage->>'cache_creation_tokens' AS BIGINT) AS cache_creation_tokens,
       duration_ms, ttft_ms
FROM raw_model_response
