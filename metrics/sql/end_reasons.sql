-- end_reasons: how the sessions ended ('(none)' when a session has no
-- session_end, e.g. after a crash).
-- Denominator of share_of_sessions: every session with a session_start.
SELECT coalesce(reason, '(none)') AS reason,
       count(*) AS sessions,
       round(count(*) / sum(count(*)) OVER (), 4) AS share_of_sessions,
       round(avg(turns), 1) AS mean_turns
FROM sessions
GROUP BY ALL
ORDER BY sessions DESC, reason;
