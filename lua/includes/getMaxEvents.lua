-- getMaxEvents(metaKey) -> integer
-- Reads meta `opts.maxLenEvents`; writes BullMQ's default 10000 when absent.
local function getMaxEvents(metaKey)
  local maxEvents = redis.call("HGET", metaKey, "opts.maxLenEvents")
  if not maxEvents then
    maxEvents = 10000
    redis.call("HSET", metaKey, "opts.maxLenEvents", maxEvents)
  end
  return tonumber(maxEvents)
end
