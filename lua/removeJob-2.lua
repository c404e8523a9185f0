--[[
  removeJob: delete one job that no worker holds, with its children unless asked not to
  (BullMQ's removeJob, removeChildren defaulting to true). A parent waiting for this job as its
  last pending child is released to its queue's wait.

  KEYS[1] job key   KEYS[2] repeat (job schedulers zset)

  ARGV[1] keyPrefix       "<prefix>:<queue>:"
  ARGV[2] jobId
  ARGV[3] removeChildren  "0" keeps the children (absent or another value: remove them)

  Returns 1 removed; 0 the job or one of its descendants is locked by a worker; -1 the job does
  not exist; -8 the job is the current iteration of a job scheduler.
  Events: removed (jobId, prev = state it was removed from, or unknown), on each removed job's
  own queue; waiting (jobId, prev waiting-children) or delayed on a released parent's queue.
]]
-- @include getMaxEvents
-- @include removeJob
-- @include removeFromState
-- @include hasLockedDescendant
-- @include removeDescendants
-- @include detachFromParent
-- @include hashField
local keyPrefix, jobId = ARGV[1], ARGV[2]
local jobKey = KEYS[1]
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local rjk = hashField(jobKey, "rjk")
if rjk then
  local score = redis.call("ZSCORE", KEYS[2], rjk)
  if score and jobId == "repeat:" .. rjk .. ":" .. score then
    return -8
  end
end
if redis.call("EXISTS", jobKey .. ":lock") == 1 then
  return 0
end
local withChildren = ARGV[3] ~= "0"
if withChildren and hasLockedDescendant(jobKey) then
  return 0
end
local prev = removeFromState(keyPrefix, jobId)
detachFromParent(jobKey)
if withChildren then
  removeDescendants(jobKey)
end
removeJob(keyPrefix, jobId)
redis.call("XADD", keyPrefix .. "events", "MAXLEN", "~", getMaxEvents(keyPrefix .. "meta"), "*",
  "event", "removed", "jobId", jobId, "prev", prev)
return 1
