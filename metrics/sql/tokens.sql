-- tokens: per turn number, the context sent to the model (context_tokens =
-- input + cache read + cache creation) and the output, and how the context
-- grows from one turn to the next within a session: a session that
-- re-sends everything every turn grows linearly, and a jump marks a large
-- tool output.
-- Denominator: sessions, the sessions with a model response at that turn;
-- growth_from_previous_turn is the mean, over the growth_sessions that have
-- a model response at this turn and at the one before, of each session's
-- own context growth between the two (a session's context at a turn is the
-- mean of its responses there). It is not the difference of the two turns'
-- means: sessions that ended at the previous turn would pull that down to
-- their own, shorter, contexts. NULL when no session has both turns.
WITH per_turn AS (
    SELECT session, turn, avg(context_tokens) AS context_tokens
    FROM model_turns GROUP BY session, turn
), growth AS (
    SELECT cur.turn, avg(cur.context_tokens - prev.context_tokens) AS growth, count(*) AS sessions
    FROM per_turn cur JOIN per_turn prev ON prev.session = cur.session AND prev.turn = cur.turn - 1
    GROUP BY cur.turn
)
SELECT m.turn,
       count(DISTINCT m.session) AS sessions,
       round(avg(m.context_tokens), 1) AS mean_context_tokens,
       quantile_cont(m.context_tokens, 0.5) AS p50_context_tokens,
       max(m.context_tokens) AS max_context_tokens,
       round(avg(m.output_tokens), 1) AS mean_output_tokens,
       round(any_value(g.growth), 1) AS growth_from_previous_turn,
       coalesce(any_value(g.sessions), 0) AS growth_sessions
FROM model_turns m
LEFT JOIN growth g ON g.turn = m.turn
GROUP BY m.turn
ORDER BY m.turn;
