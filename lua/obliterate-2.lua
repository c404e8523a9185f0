--[[
  obliterate: delete a paused queue, all its jobs and every key under "<prefix>:<queue>:",
  `count` items per call (BullMQ's Queue.obliterate; the caller repeats with the cursor it got
  back until the answer is 0). One call first removes jobs, in this order: active (their locks
  too), delayed, job schedulers (`repeat` members and `repeat:<id>` hashes), completed, wait,
  the legacy paused list, prioritized, failed, waiting-children. Each job goes with its keys
  and dedup key; a job whose parent lives in another queue first leaves the parent's
  `:dependencies`, and a parent left without pending dependencies is released from
  waiting-children to its wait, as removeJob does (a removal, not a failure: the child's
  failParentOnFailure & co. do not apply). Children in other queues of removed parents are
  left (as BullMQ). When no job is left, the rest of the queue's keys (limiter, de:*, dn:*,
  events, metrics, marker, stalled-check, id, pc, orphaned job keys, ...) are found with
  SCAN MATCH "<prefix>:<queue>:*" from the cursor, `count` * 10 keys looked at per call, and
  unlinked; meta goes last, so the queue stays paused until it is all gone.

  KEYS[1] meta   KEYS[2] active

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] count      max jobs removed by this call (> 0)
  ARGV[3] force      "1" also when jobs are active
  ARGV[4] cursor     SCAN cursor of the key sweep, "0" on the first call

  Returns 0 done (queue gone); a cursor (string) to call again with, more remains;
    -1 the queue is not paused; -2 jobs are active and force is not set.
  Events: on another queue, waiting (jobId, prev waiting-children) for a released parent
    (never delayed: as removeJob, no time is passed); none on this queue (its stream goes).
]]
-- @include removeJob
-- @include getParentLink
-- @include detachFromParent
-- @include hashField
local keyPrefix, budget, cursor = ARGV[1], tonumber(ARGV[2]), ARGV[4] or "0"
if redis.call("HEXISTS", KEYS[1], "paused") == 0 then
  return -1
end
if ARGV[3] ~= "1" and redis.call("LLEN", KEYS[2]) > 0 then
  return -2
end

local function obliterateJob(jobId)
  local jobKey = keyPrefix .. jobId
  local parentKey = getParentLink(jobKey)
  if not parentKey then
    parentKey = hashField(jobKey, "parentKey")
  end
  if parentKey and string.sub(parentKey, 1, #keyPrefix) ~= keyPrefix then
    detachFromParent(jobKey)
  end
  removeJob(keyPrefix, jobId)
end

local function takeList(suffix)
  local key = keyPrefix .. suffix
  local ids = redis.call("LRANGE", key, -budget, -1)
  for _, jobId in ipairs(ids) do
    obliterateJob(jobId)
  end
  if #ids > 0 then
    redis.call("LTRIM", key, 0, -(#ids + 1))
  end
  budget = budget - #ids
end

local function takeSet(suffix)
  local key = keyPrefix .. suffix
  local ids = redis.call("ZRANGE", key, 0, budget - 1)
  for _, jobId in ipairs(ids) do
    if suffix == "repeat" then
      redis.call("DEL", keyPrefix .. "repeat:" .. jobId)
    else
      obliterateJob(jobId)
    end
  end
  if #ids > 0 then
    redis.call("ZREMRANGEBYRANK", key, 0, #ids - 1)
  end
  budget = budget - #ids
end

local steps = {
  {takeList, "active"}, {takeSet, "delayed"}, {takeSet, "repeat"}, {takeSet, "completed"},
  {takeList, "wait"}, {takeList, "paused"}, {takeSet, "prioritized"}, {takeSet, "failed"},
  {takeSet, "waiting-children"},
}
for _, step in ipairs(steps) do
  step[1](step[2])
  if budget <= 0 then
    return cursor
  end
end

-- the key sweep: glob characters of the prefix are escaped so MATCH takes it literally
local pattern = string.gsub(keyPrefix, "[%*%?%[%]\\]", "\\%0") .. "*"
local found = redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", tonumber(ARGV[2]) * 10)
local doomed = {}
for _, key in ipairs(found[2]) do
  if key ~= KEYS[1] then
    doomed[#doomed + 1] = key
  end
end
for i = 1, #doomed, 1000 do
  redis.call("UNLINK", unpack(doomed, i, math.min(i + 999, #doomed)))
end
if found[1] ~= "0" then
  return found[1]
end
redis.call("DEL", KEYS[1])
return 0
