-- removeDeduplicationKey(keyPrefix, jobKey, jobId)
-- Deletes `de:<deid>` when it still points at this job, so a dedup key never outlives its job.
local function removeDeduplicationKey(keyPrefix, jobKey, jobId)
  local deid = redis.call("HGET", jobKey, "deid")
  if deid then
    local deKey = keyPrefix .. "de:" .. deid
    if redis.call("GET", deKey) == jobId then
      redis.call("DEL", deKey, keyPrefix .. "dn:" .. deid)
    end
  end
end
