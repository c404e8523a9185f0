--[[
  moveToWaitingChildren: an active job (a step job that added children while running) waits for
  its children (BullMQ's moveToWaitingChildren). Nothing moves when no child is pending.

  KEYS[1] active   KEYS[2] waiting-children   KEYS[3] job key
  KEYS[4] stalled  KEYS[5] events             KEYS[6] meta

  ARGV[1] jobId
  ARGV[2] token     lock token ("0" = skip the lock check)
  ARGV[3] childKey  wait only for this child's full key; "" = for any pending child
  ARGV[4] now       ms since epoch (waiting-children score)

  Returns
    0   moved to waiting-children (lock released)
    1   no pending dependency (or childKey is not pending): the job stays active
    -1 job missing, -2 lock missing, -3 not in active, -6 lock owned by another token,
    -9 a child with failParentOnFailure failed (the job has :unsuccessful children)

  Events: waiting-children (jobId, prev active).
]]
-- @include releaseActiveJob
-- @include getMaxEvents
local jobKey, jobId = KEYS[3], ARGV[1]
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
if redis.call("ZCARD", jobKey .. ":unsuccessful") > 0 then
  return -9
end
local deps = jobKey .. ":dependencies"
if ARGV[3] ~= "" then
  if redis.call("SISMEMBER", deps, ARGV[3]) == 0 then
    return 1
  end
elseif redis.call("SCARD", deps) == 0 then
  return 1
end
local released = releaseActiveJob(jobKey, jobId, ARGV[2], KEYS[4], KEYS[1], nil)
if released < 0 then
  return released
end
redis.call("ZADD", KEYS[2], tonumber(ARGV[4]), jobId)
redis.call("XADD", KEYS[5], "MAXLEN", "~", getMaxEvents(KEYS[6]), "*", "event",
  "waiting-children", "jobId", jobId, "prev", "active")
return 0
