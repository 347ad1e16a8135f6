-- One row per defense_trigger (doc.go lists the columns).
SELECT session, turn, defense, action, tool_use_id, count
FROM raw_defense_trigger
