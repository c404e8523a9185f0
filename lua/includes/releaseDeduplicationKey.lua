-- releaseDeduplicationKey(keyPrefix, deid, jobId)
-- On finalization (completed / failed, protocol §5.14): a dedup key without TTL (simple mode)
-- that still points at this job is deleted, so the next add with that deduplication id creates
-- a job again. Keys with a TTL (throttle / debounce modes) live until they expire.
-- deid: the job's `deid` field, read by the caller (false / nil without one).
local function releaseDeduplicationKey(keyPrefix, deid, jobId)
  if deid then
    local deKey = keyPrefix .. "de:" .. deid
    if redis.call("PTTL", deKey) == -1 and redis.call("GET", deKey) == jobId then
      redis.call("DEL", deKey)
    end
  end
end
