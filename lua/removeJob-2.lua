--[[
  removeJob: delete one job that no worker holds (BullMQ's removeJob without flow recursion).

  KEYS[1] job key   KEYS[2] repeat (job schedulers zset)

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] jobId

  Returns 1 removed; 0 the job is locked by a worker; -1 the job does not exist;
  -8 the job is the current iteration of a job scheduler.
  Events: removed (jobId, prev = state it was removed from, or unknown).
]]
-- @include getMaxEvents
-- @include removeJob
local keyPrefix, jobId = ARGV[1], ARGV[2]
local jobKey = KEYS[1]
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local rjk = redis.call("HGET", jobKey, "rjk")
if rjk then
  local score = redis.call("ZSCORE", KEYS[2], rjk)
  if score and jobId == "repeat:" .. rjk .. ":" .. score then
    return -8
  end
end
if redis.call("EXISTS", jobKey .. ":lock") == 1 then
  return 0
end
local prev = "unknown"
for _, state in ipairs({"completed", "waiting-children", "delayed", "failed", "prioritized"}) do
  if redis.call("ZREM", keyPrefix .. state, jobId) > 0 then
    prev = state
    break
  end
end
if prev == "unknown" then
  for _, state in ipairs({"wait", "paused", "active"}) do
    if redis.call("LREM", keyPrefix .. state, 0, jobId) > 0 then
      prev = state
      break
    end
  end
end
local parentKey = redis.call("HGET", jobKey, "parentKey")
if parentKey then
  redis.call("SREM", parentKey .. ":dependencies", jobKey)
end
removeJob(keyPrefix, jobId)
redis.call("XADD", keyPrefix .. "events", "MAXLEN", "~", getMaxEvents(keyPrefix .. "meta"), "*",
  "event", "removed", "jobId", jobId, "prev", prev)
return 1
