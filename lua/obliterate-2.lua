--[[
  obliterate: delete a paused queue and all its jobs, `count` items per call (BullMQ's
  Queue.obliterate; the caller repeats while the answer is 1). Items are removed in this order:
  active (their locks too), delayed, job schedulers (`repeat` members and `repeat:<id>`
  hashes), completed, wait, the legacy paused list, prioritized, failed. When all are empty the
  queue-level keys go: events, delay, stalled-check, stalled, id, pc, marker, meta,
  metrics:completed[:data], metrics:failed[:data]. `waiting-children` is not touched (BullMQ).

  KEYS[1] meta   KEYS[2] active

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] count      max items removed by this call (> 0)
  ARGV[3] force      "1" also when jobs are active

  Returns 0 done (queue gone); 1 more items remain, call again;
    -1 the queue is not paused; -2 jobs are active and force is not set.
  Events: none (the stream itself is deleted at the end).
]]
-- @include removeJob
local keyPrefix, budget = ARGV[1], tonumber(ARGV[2])
if redis.call("HEXISTS", KEYS[1], "paused") == 0 then
  return -1
end
if ARGV[3] ~= "1" and redis.call("LLEN", KEYS[2]) > 0 then
  return -2
end

local function takeList(suffix)
  local key = keyPrefix .. suffix
  local ids = redis.call("LRANGE", key, -budget, -1)
  for _, jobId in ipairs(ids) do
    removeJob(keyPrefix, jobId)
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
      removeJob(keyPrefix, jobId)
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
}
for _, step in ipairs(steps) do
  step[1](step[2])
  if budget <= 0 then
    return 1
  end
end
local gone = {}
for _, suffix in ipairs({"events", "delay", "stalled-check", "stalled", "id", "pc", "marker",
    "meta", "metrics:completed", "metrics:completed:data", "metrics:failed",
    "metrics:failed:data"}) do
  gone[#gone + 1] = keyPrefix .. suffix
end
redis.call("DEL", unpack(gone))
return 0
