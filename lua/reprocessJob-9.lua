--[[
  reprocessJob: run one finished job again (BullMQ's job.retry(state)). The job leaves the
  failed / completed set, loses finishedOn, processedOn and its result field (and, when asked,
  its attempt counters `atm` / `ats`), rejoins its parent's dependencies, and goes to wait
  (LPUSH, RPUSH for lifo) or to prioritized when its priority > 0 (BullMQ 6.x).

  KEYS[1] job key   KEYS[2] events   KEYS[3] source set: failed | completed   KEYS[4] wait
  KEYS[5] meta      KEYS[6] active   KEYS[7] prioritized   KEYS[8] pc   KEYS[9] marker

  ARGV[1] keyPrefix              "<prefix>:<queue>:"
  ARGV[2] jobId
  ARGV[3] state                  "failed" | "completed"
  ARGV[4] resetAttemptsMade      "1" deletes `atm`
  ARGV[5] resetAttemptsStarted   "1" deletes `ats`

  Returns 1; -1 the job does not exist; -3 the job is not in the given state.
  Events: waiting (jobId, prev <state>) (MAXLEN ~).
]]
-- @include isJobHash
-- @include reattachToParent
-- @include getMaxEvents
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include addJobWithPriority
local jobKey, jobId, state = KEYS[1], ARGV[2], ARGV[3]
if not isJobHash(jobKey) then
  return -1
end
if redis.call("ZREM", KEYS[3], jobId) == 0 then
  return -3
end
local field = state == "failed" and "failedReason" or "returnvalue"
redis.call("HDEL", jobKey, "finishedOn", "processedOn", field)
if ARGV[4] == "1" then
  redis.call("HDEL", jobKey, "atm", "attemptsMade")
end
if ARGV[5] == "1" then
  redis.call("HDEL", jobKey, "ats")
end
reattachToParent(jobKey)
local fields = redis.call("HMGET", jobKey, "priority", "opts")
local priority = tonumber(fields[1]) or 0
if priority > 0 then
  addJobWithPriority(KEYS[7], KEYS[8], priority, jobId)
else
  local ok, opts = pcall(cjson.decode, fields[2] or "{}")
  if ok and type(opts) == "table" and opts["lifo"] == true then
    redis.call("RPUSH", KEYS[4], jobId)
  else
    redis.call("LPUSH", KEYS[4], jobId)
  end
end
addBaseMarkerIfNeeded(KEYS[9], isQueuePausedOrMaxed(KEYS[5], KEYS[6]))
redis.call("XADD", KEYS[2], "MAXLEN", "~", getMaxEvents(KEYS[5]), "*", "event", "waiting",
  "jobId", jobId, "prev", state)
return 1
