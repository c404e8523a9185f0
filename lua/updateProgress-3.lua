--[[
  updateProgress: store a job's progress and announce it (BullMQ's updateProgress).

  KEYS[1] job key   KEYS[2] events   KEYS[3] meta

  ARGV[1] jobId
  ARGV[2] progress  JSON text (a number or an object)

  Returns 0; -1 the job does not exist.
  Events: progress (jobId, data = the JSON text).
]]
-- @include getMaxEvents
if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
redis.call("HSET", KEYS[1], "progress", ARGV[2])
redis.call("XADD", KEYS[2], "MAXLEN", "~", getMaxEvents(KEYS[3]), "*", "event", "progress",
  "jobId", ARGV[1], "data", ARGV[2])
return 0
