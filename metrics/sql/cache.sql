-- cache: per session, the prompt cache's share of the input.
-- Denominator of cache_read_share: all input tokens, that is input_tokens
-- (which exclude the cache) + cache_read_tokens + cache_creation_tokens.
SELECT session, input_tokens, cache_read_tokens, cache_creation_tokens,
       round(cache_read_tokens / nullif(input_tokens + cache_read_tokens + cache_creation_tokens, 0), 4)
           AS cache_read_share
FROM sessions
ORDER BY session;
