--[[
  cleanJobsInSet: remove up to `limit` jobs of one state that are older than a cutoff (BullMQ's
  Queue.clean; the caller repeats for larger amounts). Age per state:
    completed / failed: the set's score (finishedOn) <= cutoff, oldest first;
    wait / paused / active (lists, scanned from the oldest end): the first present of
      finishedOn, processedOn, timestamp; active jobs holding a lock are skipped;
    delayed: processedOn, else timestamp;   prioritized: timestamp.
  An id without a hash (or without any of those fields) counts as old. Current iterations of a
  job scheduler are skipped except in completed / failed. Removal is "hard" (keys, dedup key,
  parent link; a same-queue parent left without dependencies in waiting-children goes too),
  except that a finished job's dedup key with a TTL stays until it expires (a throttle
  outlives its owner).

  KEYS[1] the state's key (completed, failed, wait, paused, active, delayed, prioritized)
  KEYS[2] events   KEYS[3] meta

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] cutoff     ms since epoch; jobs at or before it are removed (now - grace)
  ARGV[3] limit      max jobs removed by this call; <= 0 or > 10000 means 10000
  ARGV[4] state      "completed" | "failed" | "wait" | "paused" | "active" | "delayed" | "prioritized"

  Returns the removed job ids (array).
  Events: cleaned (count) once per call, also for 0 (MAXLEN ~).
]]
-- @include removeJobWithParentLink
-- @include isCurrentSchedulerIteration
-- @include getMaxEvents
local setKey, keyPrefix, cutoff, limit, state = KEYS[1], ARGV[1], tonumber(ARGV[2]),
  tonumber(ARGV[3]), ARGV[4]
if limit <= 0 or limit > 10000 then
  limit = 10000
end
local removed = {}
local isList = state == "wait" or state == "paused" or state == "active"

local function ageOf(jobId)
  local f = redis.pcall("HMGET", keyPrefix .. jobId, "finishedOn", "processedOn", "timestamp")
  if f.err then
    return nil  -- the key is not a hash: no age, so it is cleaned with the rest
  end
  if isList then
    return tonumber(f[1] or f[2] or f[3])
  elseif state == "delayed" then
    return tonumber(f[2] or f[3])
  end
  return tonumber(f[3])
end

local function removable(jobId)
  if state == "active" and redis.call("EXISTS", keyPrefix .. jobId .. ":lock") == 1 then
    return false
  end
  if isCurrentSchedulerIteration(keyPrefix, jobId) then
    return false
  end
  local t = ageOf(jobId)
  return t == nil or t <= cutoff
end

if state == "completed" or state == "failed" then
  local ids = redis.call("ZRANGEBYSCORE", setKey, "-inf", cutoff, "LIMIT", 0, limit)
  for _, jobId in ipairs(ids) do
    removeJobWithParentLink(keyPrefix, jobId, true)
    redis.call("ZREM", setKey, jobId)
    removed[#removed + 1] = jobId
  end
else
  local chunk, offset = 1000, 0
  while #removed < limit do
    local ids
    if isList then
      ids = redis.call("LRANGE", setKey, -(offset + chunk), -(offset + 1))
    else
      ids = redis.call("ZRANGE", setKey, offset, offset + chunk - 1)
    end
    if #ids == 0 then
      break
    end
    local from, to, step = 1, #ids, 1
    if isList then
      from, to, step = #ids, 1, -1 -- oldest (right end) first
    end
    for i = from, to, step do
      if removable(ids[i]) then
        removed[#removed + 1] = ids[i]
        if #removed >= limit then
          break
        end
      end
    end
    if #ids < chunk then
      break
    end
    offset = offset + chunk
  end
  for _, jobId in ipairs(removed) do
    if isList then
      redis.call("LREM", setKey, 0, jobId)
    else
      redis.call("ZREM", setKey, jobId)
    end
    removeJobWithParentLink(keyPrefix, jobId)
  end
end
redis.call("XADD", KEYS[2], "MAXLEN", "~", getMaxEvents(KEYS[3]), "*", "event", "cleaned",
  "count", #removed)
return removed
