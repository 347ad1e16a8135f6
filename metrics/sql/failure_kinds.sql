-- failure_kinds: failed calls per failure kind; tool_error (the tool ran and
-- reported failure) is counted apart from exception (our own bug). ran
-- counts the failures whose tool had started (tool_error, timeout and
-- exception always; aborted when the abort came while it ran; never
-- not_found, hook_blocked, invalid_input or permission_denied).
-- Denominator of share_of_failures: every failed call.
SELECT failure_kind,
       count(*) AS failures,
       count(*) FILTER (WHERE ran) AS ran,
       round(count(*) / sum(count(*)) OVER (), 4) AS share_of_failures
FROM tool_calls
WHERE outcome = 'failure'
GROUP BY failure_kind
ORDER BY failures DESC, failure_kind;
