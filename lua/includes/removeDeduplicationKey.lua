-- removeDeduplicationKey(keyPrefix, jobKey, jobId, keepTtl)
-- Deletes `de:<deid>` (and the parked `dn:<deid>`) when it still points at this job, so a dedup
-- key never outlives a removed job. With keepTtl (the job is deleted after it finished:
-- removeOnComplete / removeOnFail, trimming, clean of completed / failed) a key that has a TTL
-- is left to run out its ttl: a throttle outlives its owner (BullMQ keeps it too). A key
-- without TTL was already released at finish (releaseDeduplicationKey).
-- @include hashField
local function removeDeduplicationKey(keyPrefix, jobKey, jobId, keepTtl)
  local deid = hashField(jobKey, "deid")
  if deid then
    local deKey = keyPrefix .. "de:" .. deid
    if redis.call("GET", deKey) == jobId and not (keepTtl and redis.call("PTTL", deKey) > 0) then
      redis.call("DEL", deKey, keyPrefix .. "dn:" .. deid)
    end
  end
end
