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

-- prices: per model, US dollars per million tokens, as the caller gave them
-- (SetPrices: the prices: section of a configuration); retrace ships none.
CREATE TABLE IF NOT EXISTS prices (model VARCHAR PRIMARY KEY, input_per_mtok DOUBLE NOT NULL,
    output_per_mtok DOUBLE NOT NULL, cache_read_per_mtok DOUBLE NOT NULL, cache_write_per_mtok DOUBLE NOT NULL);

-- model_costs: the one definition of cost_usd (cost.go): per model
-- response, its usage at the prices of its session's model. input_tokens
-- excludes the cache's tokens, which are charged at their own prices.
-- cost_usd is NULL when the model has no price: an unknown cost, never 0.
CREATE OR REPLACE VIEW model_costs AS
SELECT m.session, m.turn, s.model,
       (m.input_tokens * p.input_per_mtok + m.output_tokens * p.output_per_mtok
        + m.cache_read_tokens * p.cache_read_per_mtok + m.cache_creation_tokens * p.cache_write_per_mtok) / 1e6 AS cost_usd
FROM model_turns m
LEFT JOIN sessions s ON s.session = m.session
LEFT JOIN prices p ON p.model = s.model;
