-- cache: in total (session '(all)', first) and per session, the prompt
-- cache's share of the input.
-- Denominator of cache_read_share: all input tokens, that is input_tokens
-- (which exclude the cache) + cache_read_tokens + cache_creation_tokens.
SELECT coalesce(session, '(all)') AS session,
       sum(input_tokens) AS input_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       sum(cache_creation_tokens) AS cache_creation_tokens,
       round(sum(cache_read_tokens) / nullif(sum(input_tokens + cache_read_tokens + cache_creation_tokens), 0), 4)
           AS cache_read_share
FROM sessions
GROUP BY GROUPING SETS ((session), ())
ORDER BY grouping(session) DESC, session;
