--[[
  removeJobScheduler: delete job scheduler S (`ZREM repeat S`, `DEL repeat:S`) and its pending
  iteration `repeat:S:<score>` if it has not started (delayed, wait or prioritized). An active
  iteration finishes normally; its worker then finds no scheduler and adds no next one.
  A paused scheduler (pauseJobScheduler) is removed too: its hash, and its id from the set
  `bullq:paused-schedulers`.
  The queue keys other than `repeat` are derived from keyPrefix (same hash slot).

  KEYS[1] repeat (zset)

  ARGV[1] keyPrefix   "<prefix>:<queue>:"
  ARGV[2] schedulerId

  Returns
    1  the scheduler existed and was removed
    0  no such scheduler

  Events: removed (jobId, prev = delayed / wait / prioritized) for the pending iteration.
]]
-- @include getMaxEvents
-- @include removePendingIteration
local keyPrefix = ARGV[1]
local schedulerId = ARGV[2]
local schedulerKey = keyPrefix .. "repeat:" .. schedulerId
local score = redis.call("ZSCORE", KEYS[1], schedulerId)
local existed = redis.call("ZREM", KEYS[1], schedulerId) + redis.call("DEL", schedulerKey)
redis.call("SREM", keyPrefix .. "bullq:paused-schedulers", schedulerId)
if score then
  local k = {}
  for i, suffix in ipairs({"wait", "paused", "meta", "id", "delayed", "prioritized", "pc",
      "events", "marker", "active"}) do
    k[i] = keyPrefix .. suffix
  end
  removePendingIteration(k, keyPrefix, "repeat:" .. schedulerId .. ":" .. score,
    getMaxEvents(k[3]))
end
if existed > 0 then
  return 1
end
return 0
