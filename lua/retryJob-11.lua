--[[
  retryJob: an active job that failed goes straight back to wait / prioritized (backoff delay 0).
  BullMQ's retryJob; the attempt counter `atm` is incremented.

  KEYS[1..11] wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker

  ARGV[1] keyPrefix     "<prefix>:<queue>:"
  ARGV[2] jobId
  ARGV[3] now           ms since epoch
  ARGV[4] token         lock token ("0" = skip the lock check)
  ARGV[5] failedReason  plain text of the failed attempt
  ARGV[6] stacktrace    JSON array text

  Returns 0; -1 job missing, -2 lock missing, -3 not in active, -6 lock owned by another token.
  Events: waiting (prev delayed) for promoted jobs; waiting (jobId, prev active).
]]
-- @include isJobHash
-- @include fetchKeys
-- @include incrJobCounter
-- @include getMaxEvents
-- @include promoteDelayedJobs
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include addJobWithPriority
-- @include releaseActiveJob
local k = fetchKeys()
local keyPrefix, jobId, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local jobKey = keyPrefix .. jobId
promoteDelayedJobs(k.delayed, k.wait, k.prioritized, k.pc, k.events, keyPrefix, now)
if not isJobHash(jobKey) then
  return -1
end
local released = releaseActiveJob(jobKey, jobId, ARGV[4], k.stalled, k.active,
  {ARGV[5], ARGV[6]})
if released < 0 then
  return released
end
local maxEvents = getMaxEvents(k.meta)
local pausedOrMaxed = isQueuePausedOrMaxed(k.meta, k.active)
local fields = redis.call("HMGET", jobKey, "priority", "opts")
local priority = tonumber(fields[1]) or 0
if priority > 0 then
  addJobWithPriority(k.prioritized, k.pc, priority, jobId)
else
  local ok, opts = pcall(cjson.decode, fields[2] or "{}")
  if ok and type(opts) == "table" and opts["lifo"] == true then
    redis.call("RPUSH", k.wait, jobId)
  else
    redis.call("LPUSH", k.wait, jobId)
  end
end
addBaseMarkerIfNeeded(k.marker, pausedOrMaxed)
incrJobCounter(jobKey, "atm")
redis.call("XADD", k.events, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId,
  "prev", "active")
return 0
