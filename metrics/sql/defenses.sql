-- defenses: per session and in total ('(all)'), each defense that was
-- enabled in session_start or triggered, with its triggers; enabled defenses
-- with triggers = 0 never acted. Denominator of sessions_enabled: the
-- sessions (of the group) whose session_start enabled the defense.
WITH enabled AS (
    SELECT DISTINCT session, unnest(from_json(defenses, '["VARCHAR"]')) AS defense
    FROM events WHERE type = 'session_start'
), triggered AS (
    SELECT session, defense, count(*) AS triggers FROM defenses GROUP BY session, defense
), joined AS (
    SELECT session, defense, e.defense IS NOT NULL AS enabled, coalesce(t.triggers, 0) AS triggers
    FROM enabled e FULL OUTER JOIN triggered t USING (session, defense)
)
SELECT coalesce(session, '(all)') AS session, defense,
       count(*) FILTER (WHERE enabled) AS sessions_enabled,
       sum(triggers) AS triggers
FROM joined
GROUP BY GROUPING SETS ((session, defense), (defense))
ORDER BY grouping(session), session, defense;
