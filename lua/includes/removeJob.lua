-- removeJob(keyPrefix, jobId)
-- Deletes a job's keys, its dedup key and its lock; state structures are the caller's business.
-- @include removeJobKeys
-- @include removeDeduplicationKey
local function removeJob(keyPrefix, jobId)
  local jobKey = keyPrefix .. jobId
  removeDeduplicationKey(keyPrefix, jobKey, jobId)
  redis.call("DEL", jobKey .. ":lock")
  removeJobKeys(jobKey)
end
