--[[
  changeDelay: re-time a delayed job to run `delay` ms from now (BullMQ's job.changeDelay).

  KEYS[1] job key   KEYS[2] delayed   KEYS[3] events   KEYS[4] marker   KEYS[5] meta

  ARGV[1] jobId
  ARGV[2] now     ms since epoch
  ARGV[3] delay   ms from now (>= 0)

  Returns 0; -1 the job does not exist; -3 the job is not in delayed.
  Events: delayed (jobId, delay = new due time in ms) (MAXLEN ~).
]]
-- @include isJobHash
-- @include getDelayedScore
-- @include getMaxEvents
-- @include addDelayMarker
local jobKey, jobId = KEYS[1], ARGV[1]
local now, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
if not isJobHash(jobKey) then
  return -1
end
if not redis.call("ZSCORE", KEYS[2], jobId) then
  return -3
end
local due = now + delay
redis.call("ZADD", KEYS[2], getDelayedScore(KEYS[2], due), jobId)
redis.call("HSET", jobKey, "delay", delay)
redis.call("XADD", KEYS[3], "MAXLEN", "~", getMaxEvents(KEYS[5]), "*", "event", "delayed",
  "jobId", jobId, "delay", due)
addDelayMarker(KEYS[4], KEYS[2])
return 0
