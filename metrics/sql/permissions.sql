-- permissions: permission decisions by decision (allow, prompt, deny),
-- source and whether a prompt was needed.
-- Denominator of share_of_decisions: every permission event.
SELECT decision, source, needed_prompt,
       count(*) AS decisions,
       round(count(*) / sum(count(*)) OVER (), 4) AS share_of_decisions
FROM permissions
GROUP BY decision, source, needed_prompt
ORDER BY decision, source, needed_prompt;
