--[[
  moveToDelayed: an active job waits in delayed until now + delay (retry with backoff, or a task
  that postpones itself). BullMQ's moveToDelayed.

  KEYS[1..11] wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker

  ARGV[1] keyPrefix     "<prefix>:<queue>:"
  ARGV[2] jobId
  ARGV[3] now           ms since epoch
  ARGV[4] delay         ms from now
  ARGV[5] token         lock token ("0" = skip the lock check)
  ARGV[6] skipAttempt   "1" to leave `atm` unchanged (the task postponed itself)
  ARGV[7] failedReason  plain text of the failed attempt, "" for none
  ARGV[8] stacktrace    JSON array text, "" for none

  Returns 0; -1 job missing, -2 lock missing, -3 not in active, -6 lock owned by another token.
  Events: delayed (jobId, delay = due time ms).
]]
-- @include isJobHash
-- @include fetchKeys
-- @include incrJobCounter
-- @include getMaxEvents
-- @include getDelayedScore
-- @include addDelayMarker
-- @include releaseActiveJob
local k = fetchKeys()
local keyPrefix, jobId, now, delay = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local jobKey = keyPrefix .. jobId
if not isJobHash(jobKey) then
  return -1
end
local released = releaseActiveJob(jobKey, jobId, ARGV[5], k.stalled, k.active,
  ARGV[7] ~= "" and {ARGV[7], ARGV[8]} or nil)
if released < 0 then
  return released
end
local maxEvents = getMaxEvents(k.meta)
local due = now + delay
redis.call("ZADD", k.delayed, getDelayedScore(k.delayed, due), jobId)
if ARGV[6] ~= "1" then
  incrJobCounter(jobKey, "atm")
end
redis.call("HSET", jobKey, "delay", delay)
redis.call("XADD", k.events, "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", jobId,
  "delay", due)
addDelayMarker(k.marker, k.delayed)
return 0
