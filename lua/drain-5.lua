--[[
  drain: remove every job that waits to run: wait, the legacy paused list, prioritized, and
  with ARGV[2] = "1" also delayed (BullMQ's Queue.drain). Current iterations of job schedulers
  stay. Removal is "hard" (keys, dedup key, parent link; a same-queue parent left without
  dependencies in waiting-children goes too). Active, finished and waiting-children jobs stay.

  KEYS[1] wait   KEYS[2] paused (legacy list)   KEYS[3] delayed   KEYS[4] prioritized
  KEYS[5] pc

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] delayed    "1" also drains delayed jobs

  Returns the number of jobs removed.
  Events: none (as BullMQ).
]]
-- @include removeJobWithParentLink
-- @include isCurrentSchedulerIteration
local keyPrefix = ARGV[1]
local removed = 0

local function drainList(key)
  local ids = redis.call("LRANGE", key, 0, -1)
  local kept = {}
  for _, jobId in ipairs(ids) do
    if isCurrentSchedulerIteration(keyPrefix, jobId) then
      kept[#kept + 1] = jobId
    else
      removeJobWithParentLink(keyPrefix, jobId)
      removed = removed + 1
    end
  end
  redis.call("DEL", key)
  for i = 1, #kept, 5000 do
    redis.call("RPUSH", key, unpack(kept, i, math.min(i + 4999, #kept)))
  end
end

local function drainSet(key)
  local ids = redis.call("ZRANGE", key, 0, -1)
  for _, jobId in ipairs(ids) do
    if not isCurrentSchedulerIteration(keyPrefix, jobId) then
      removeJobWithParentLink(keyPrefix, jobId)
      redis.call("ZREM", key, jobId)
      removed = removed + 1
    end
  end
end

drainList(KEYS[1])
drainList(KEYS[2])
drainSet(KEYS[4])
if redis.call("ZCARD", KEYS[4]) == 0 then
  redis.call("DEL", KEYS[5])
end
if ARGV[2] == "1" then
  drainSet(KEYS[3])
end
return removed
