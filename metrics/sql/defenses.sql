-- defenses: the in-loop defenses' triggers, per defense over all sessions
-- (session '(all)', first) and per session where a defense acted. A defense
-- enabled but never triggered shows triggers = 0 in its '(all)' row.
-- Denominators: sessions_enabled, the sessions whose session_start enabled
-- the defense; sessions_triggered, those in which it acted at least once
-- (in a per-session row both are 0 or 1).
WITH enabled AS (
    SELECT DISTINCT session, unnest(from_json(defenses, '["VARCHAR"]')) AS defense
    FROM events WHERE type = 'session_start'
), triggered AS (
    SELECT session, defense, count(*) AS triggers FROM defenses GROUP BY session, defense
), joined AS (
    SELECT session, defense, e.defense IS NOT NULL AS enabled, coalesce(t.triggers, 0) AS triggers
    FROM enabled e FULL OUTER JOIN triggered t USING (session, defense)
)
SELECT * FROM (
    SELECT '(all)' AS session, defense,
           count(*) FILTER (WHERE enabled) AS sessions_enabled,
           count(*) FILTER (WHERE triggers > 0) AS sessions_triggered,
           sum(triggers) AS triggers
    FROM joined
    GROUP BY defense
    UNION ALL
    SELECT session, defense, CAST(enabled AS INTEGER), 1, triggers
    FROM joined
    WHERE triggers > 0
)
ORDER BY session <> '(all)', session, defense;
