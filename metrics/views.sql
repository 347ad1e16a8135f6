-- The views over the tables of each event type (raw_<type>) and raw_events,
-- their union; doc.go documents their columns. The derived views
-- (tool_calls, model_turns, sessions, defenses) are in derived/ (derived.go).
CREATE OR REPLACE VIEW events AS SELECT * FROM raw_events;

CREATE OR REPLACE VIEW permissions AS
SELECT session, turn, tool_use_id, tool, replace(type, 'permission_', '') AS decision,
       source, step, coalesce(needed_prompt, false) AS needed_prompt, rule
FROM raw_events WHERE type IN ('permission_allow', 'permission_prompt', 'permission_deny');

CREATE OR REPLACE VIEW reminders AS
SELECT session, turn, kind, dedup_key, role, strlen(text) AS text_bytes
FROM raw_reminder;
