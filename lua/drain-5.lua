--[[
  drain: remove every job that waits to run: wait, the legacy paused list, prioritized, and
  with ARGV[2] = "1" also delayed (BullMQ's Queue.drain), at most `count` jobs per call (the
  caller repeats while the answer says more). Current iterations of job schedulers stay, in
  their place. Removal is "hard" (keys, dedup key, parent link; a same-queue parent left
  without dependencies in waiting-children goes too). Active, finished and waiting-children
  jobs stay.

  Each structure is read from the end where its kept iterations gather (the right end of a
  list, the low scores of a sorted set): `kept` + `count` ids, where `kept` is the number of
  iterations this structure kept at that end in the previous call (0 at first). Every id read
  is checked again, so jobs moved meanwhile by workers are not lost track of; the work of a
  call is O(kept + count).

  KEYS[1] wait   KEYS[2] paused (legacy list)   KEYS[3] delayed   KEYS[4] prioritized
  KEYS[5] pc

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] delayed    "1" also drains delayed jobs
  ARGV[3] count      max jobs removed by this call (> 0)
  ARGV[4..7] kept    iterations kept at the read end of wait, paused, prioritized, delayed by
                     the previous call ("0" on the first call)

  Returns {removed, more, keptWait, keptPaused, keptPrioritized, keptDelayed}: removed jobs of
    this call; more = 1 when the caller must call again with the kept counts returned.
  Events: none (as BullMQ).
]]
-- @include removeJobWithParentLink
-- @include isCurrentSchedulerIteration
local keyPrefix, budget = ARGV[1], tonumber(ARGV[3])
local removed = 0
local kept = {tonumber(ARGV[4]) or 0, tonumber(ARGV[5]) or 0, tonumber(ARGV[6]) or 0,
              tonumber(ARGV[7]) or 0}

-- Removes the jobs among `ids` that are not current iterations; returns the kept ids and the
-- removed ids, each in the order read.
local function removeAll(ids)
  local keep, gone = {}, {}
  for _, jobId in ipairs(ids) do
    if isCurrentSchedulerIteration(keyPrefix, jobId) then
      keep[#keep + 1] = jobId
    else
      removeJobWithParentLink(keyPrefix, jobId)
      gone[#gone + 1] = jobId
    end
  end
  removed = removed + #gone
  budget = budget - #gone
  return keep, gone
end

-- One batch of a list from its right end; returns (kept at that end now, whole list read).
local function drainList(key, hint)
  local want = hint + budget
  local ids = redis.call("LRANGE", key, -want, -1)
  if #ids == 0 then
    return 0, true
  end
  redis.call("LTRIM", key, 0, -(#ids + 1))
  local keep = removeAll(ids)
  for i = 1, #keep, 5000 do
    redis.call("RPUSH", key, unpack(keep, i, math.min(i + 4999, #keep)))
  end
  return #keep, #ids < want
end

-- One batch of a sorted set from its lowest score; returns (kept there now, whole set read).
local function drainSet(key, hint)
  local want = hint + budget
  local ids = redis.call("ZRANGE", key, 0, want - 1)
  local keep, gone = removeAll(ids)
  for i = 1, #gone, 5000 do
    redis.call("ZREM", key, unpack(gone, i, math.min(i + 4999, #gone)))
  end
  return #keep, #ids < want
end

local steps = {{drainList, KEYS[1]}, {drainList, KEYS[2]}, {drainSet, KEYS[4]}}
if ARGV[2] == "1" then
  steps[4] = {drainSet, KEYS[3]}
end
local more = 0
for i, step in ipairs(steps) do
  if budget <= 0 then -- (a read of 0 ids would be LRANGE -0 -1: the whole list)
    more = 1
    break
  end
  local done
  kept[i], done = step[1](step[2], kept[i])
  if not done then
    more = 1
    break
  end
end
if redis.call("ZCARD", KEYS[4]) == 0 then
  redis.call("DEL", KEYS[5])
end
return {removed, more, kept[1], kept[2], kept[3], kept[4]}
