-- tokens: per turn number, the context sent to the model (context_tokens =
-- input + cache read + cache creation) and the output, and how the context
-- grows from one turn to the next: a session that re-sends everything every
-- turn grows linearly, and a jump marks a large tool output (seed §14.8).
-- Denominator: sessions, the sessions with a model response at that turn;
-- growth compares mean context tokens with the previous turn's.
SELECT turn,
       count(DISTINCT session) AS sessions,
       round(avg(context_tokens), 1) AS mean_context_tokens,
       quantile_cont(context_tokens, 0.5) AS p50_context_tokens,
       max(context_tokens) AS max_context_tokens,
       round(avg(output_tokens), 1) AS mean_output_tokens,
       round(avg(context_tokens) - lag(avg(context_tokens)) OVER (ORDER BY turn), 1) AS growth_from_previous_turn
FROM model_turns
GROUP BY turn
ORDER BY turn;
