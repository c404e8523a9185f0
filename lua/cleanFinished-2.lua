--[[
  cleanFinished: periodic retention sweep of completed or failed (run by workers every
  maintenance interval), so removeOnComplete / removeOnFail hold on a quiet queue too.
  Each job's own age (opts[optsField].age, or `true`) wins over the default age.

  KEYS[1] target set: completed or failed     KEYS[2] events

  ARGV[1] keyPrefix     "<prefix>:<queue>:"
  ARGV[2] now           ms since epoch
  ARGV[3] defaultCount  keep the newest N (-1 = keep all)
  ARGV[4] defaultAge    s (0 = none)
  ARGV[5] limit         oldest jobs examined per call
  ARGV[6] optsField     "removeOnComplete" | "removeOnFail"

  Returns the number of jobs removed.
  Events: cleaned (count) when any job was removed.
]]
-- @include removeJob
-- @include getKeepAge
local keyPrefix, now = ARGV[1], tonumber(ARGV[2])
local defaultCount, defaultAge, limit = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local removed = 0
local oldest = redis.call("ZRANGE", KEYS[1], 0, limit - 1, "WITHSCORES")
for i = 1, #oldest, 2 do
  local jobId, finishedOn = oldest[i], tonumber(oldest[i + 1])
  local age, removeNow = getKeepAge(keyPrefix .. jobId, ARGV[6], defaultAge)
  if removeNow or (age > 0 and finishedOn <= now - age * 1000) then
    removeJob(keyPrefix, jobId, true)
    redis.call("ZREM", KEYS[1], jobId)
    removed = removed + 1
  end
end
if defaultCount >= 0 then
  local extra = redis.call("ZREVRANGE", KEYS[1], defaultCount, defaultCount + limit - 1)
  for _, jobId in ipairs(extra) do
    removeJob(keyPrefix, jobId, true)
  end
  if #extra > 0 then
    redis.call("ZREM", KEYS[1], unpack(extra))
    removed = removed + #extra
  end
end
if removed > 0 then
  redis.call("XADD", KEYS[2], "*", "event", "cleaned", "count", removed)
end
return removed
