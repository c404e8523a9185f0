--[[
  changePriority: give a job a new priority (BullMQ's job.changePriority). A job waiting in wait
  or prioritized is re-queued under the new priority: 0 → wait (LPUSH; RPUSH with lifo), > 0 →
  prioritized (fresh counter score; with lifo, in front of its priority: score priority × 2^32),
  plus marker "0" unless the queue is paused or maxed. Jobs in any other state only get the
  field. The `priority` field is always written.

  KEYS[1] job key   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] pc   KEYS[5] meta
  KEYS[6] active    KEYS[7] marker

  ARGV[1] jobId
  ARGV[2] priority   0 none, 1 most urgent .. 2097151
  ARGV[3] lifo       "1" | "0"

  Returns 0; -1 the job does not exist.
  Events: none (as BullMQ).
]]
-- @include isJobHash
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include addJobWithPriority
local jobKey, jobId, priority, lifo = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3] == "1"
if not isJobHash(jobKey) then
  return -1
end
local queued = redis.call("ZREM", KEYS[3], jobId) > 0
if not queued then
  queued = redis.call("LREM", KEYS[2], -1, jobId) > 0
end
if queued then
  if priority == 0 then
    if lifo then
      redis.call("RPUSH", KEYS[2], jobId)
    else
      redis.call("LPUSH", KEYS[2], jobId)
    end
  elseif lifo then
    redis.call("ZADD", KEYS[3], priority * 4294967296, jobId)
  else
    addJobWithPriority(KEYS[3], KEYS[4], priority, jobId)
  end
  addBaseMarkerIfNeeded(KEYS[7], isQueuePausedOrMaxed(KEYS[5], KEYS[6]))
end
redis.call("HSET", jobKey, "priority", priority)
return 0
