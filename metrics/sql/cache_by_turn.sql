-- cache_by_turn: per turn number, the prompt cache's share of the input.
-- Denominator of cache_read_share: all input tokens of the turn's model
-- responses, input_tokens + cache_read_tokens + cache_creation_tokens; the
-- first turn has nothing to read, and a share that drops later marks a
-- cache miss (a changed prefix).
SELECT turn,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       sum(cache_creation_tokens) AS cache_creation_tokens,
       round(sum(cache_read_tokens) / nullif(sum(context_tokens), 0), 4) AS cache_read_share
FROM model_turns
GROUP BY turn
ORDER BY turn;
