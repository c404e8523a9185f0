-- removeJob(keyPrefix, jobId, finished)
-- Deletes a job's keys, its dedup key and its lock; state structures are the caller's business.
-- finished: the job is deleted by a retention rule after it completed / failed, so a dedup
-- key with a TTL is kept until it expires (see removeDeduplicationKey).
-- @include removeJobKeys
-- @include removeDeduplicationKey
local function removeJob(keyPrefix, jobId, finished)
  local jobKey = keyPrefix .. jobId
  removeDeduplicationKey(keyPrefix, jobKey, jobId, finished)
  redis.call("DEL", jobKey .. ":lock")
  removeJobKeys(jobKey)
end
