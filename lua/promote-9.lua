--[[
  promote: move one delayed job to wait / prioritized now (BullMQ's promote).

  KEYS[1] delayed  KEYS[2] wait    KEYS[3] paused (unused, legacy)   KEYS[4] meta
  KEYS[5] prioritized  KEYS[6] active  KEYS[7] pc  KEYS[8] events  KEYS[9] marker

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] jobId

  Returns 0; -3 the job is not in delayed.
  Events: waiting (jobId, prev delayed).
]]
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include addJobWithPriority
-- @include hashField
local jobId = ARGV[2]
local jobKey = ARGV[1] .. jobId
if redis.call("ZREM", KEYS[1], jobId) == 0 then
  return -3
end
-- a key that is not a hash (written over by hand) still moves: the fetch fails it with its reason
local priority = tonumber(hashField(jobKey, "priority") or 0) or 0
if priority == 0 then
  redis.call("LPUSH", KEYS[2], jobId)
else
  addJobWithPriority(KEYS[5], KEYS[7], priority, jobId)
end
addBaseMarkerIfNeeded(KEYS[9], isQueuePausedOrMaxed(KEYS[4], KEYS[6]))
redis.call("XADD", KEYS[8], "*", "event", "waiting", "jobId", jobId, "prev", "delayed")
redis.pcall("HSET", jobKey, "delay", 0)
return 0
