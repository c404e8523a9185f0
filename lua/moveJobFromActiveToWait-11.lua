--[[
  moveJobFromActiveToWait: hand an active job back to the front of its queue without counting an
  attempt (a worker shutting down past its grace period, or a manual rate limit).

  KEYS[1..11] wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] jobId
  ARGV[3] token      lock token ("0" = skip the lock check)

  Returns the limiter's PTTL in ms (0 when none); -1 job missing, -2 lock missing,
  -3 not in active, -6 lock owned by another token.
  Events: waiting (jobId, prev active).
]]
-- @include fetchKeys
-- @include getMaxEvents
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include releaseActiveJob
local k = fetchKeys()
local keyPrefix, jobId = ARGV[1], ARGV[2]
local jobKey = keyPrefix .. jobId
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local released = releaseActiveJob(jobKey, jobId, ARGV[3], k.stalled, k.active, nil)
if released < 0 then
  return released
end
local maxEvents = getMaxEvents(k.meta)
local priority = tonumber(redis.call("HGET", jobKey, "priority") or 0) or 0
if priority > 0 then
  -- front of its priority: counter part 0
  redis.call("ZADD", k.prioritized, priority * 4294967296, jobId)
else
  redis.call("RPUSH", k.wait, jobId)
end
addBaseMarkerIfNeeded(k.marker, isQueuePausedOrMaxed(k.meta, k.active))
redis.call("XADD", k.events, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId,
  "prev", "active")
local ttl = redis.call("PTTL", k.limiter)
if ttl > 0 then
  return ttl
end
return 0
