-- A failed pod keeps how it ended, as its node reported it in PodFailed: the exit status (negative:
-- killed by that signal; NULL: no process ran) and the node's words. Nullable without a default, so
-- adding them rewrites nothing.
ALTER TABLE pods ADD COLUMN exit_code integer, ADD COLUMN failure_reason text;

-- Pods projected failed before these columns existed: their PodFailed is in the log. A finished pod
-- stays finished, so the first PodFailed of a pod that is failed now is the one that ended it.
UPDATE pods p SET exit_code = f.exit_code, failure_reason = f.reason
FROM (
    SELECT DISTINCT ON (payload->>'job', (payload->>'pod')::integer)
           payload->>'job' AS job, (payload->>'pod')::integer AS idx,
           (payload->>'exit_code')::integer AS exit_code, NULLIF(payload->>'reason', '') AS reason
    FROM events WHERE type = 'PodFailed'
    ORDER BY payload->>'job', (payload->>'pod')::integer, stream_seq, idx
) f
WHERE p.job = f.job AND p.idx = f.idx AND p.status = 'failed';

COMMENT ON COLUMN pods.status IS 'pending | binding | bound | releasing | completed | failed';
COMMENT ON COLUMN jobs.status IS
    'pending | running | preempted | completed | failed | deleted; the rule: services/projector/convert.py';
