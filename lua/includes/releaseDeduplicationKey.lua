-- releaseDeduplicationKey(keyPrefix, jobKey, jobId) -> deid | nil
-- On finalization (completed / failed, protocol §5.14): a dedup key without TTL (simple mode)
-- that still points at this job is deleted, so the next add with that deduplication id creates
-- a job again. Keys with a TTL (throttle / debounce modes) live until they expire.
-- Returns the job's deduplication id (nil without one), read once for the caller.
local function releaseDeduplicationKey(keyPrefix, jobKey, jobId)
  local deid = redis.call("HGET", jobKey, "deid")
  if deid then
    local deKey = keyPrefix .. "de:" .. deid
    if redis.call("PTTL", deKey) == -1 and redis.call("GET", deKey) == jobId then
      redis.call("DEL", deKey)
    end
  end
  return deid
end
