-- getMaxEvents(metaKey) -> text
-- Reads meta `opts.maxLenEvents`; writes BullMQ's default 10000 when absent. Returns the count
-- as text, what XADD / XTRIM MAXLEN take (a Lua number would be formatted again per call).
local function getMaxEvents(metaKey)
  local maxEvents = redis.call("HGET", metaKey, "opts.maxLenEvents")
  if not maxEvents then
    maxEvents = "10000"
    redis.call("HSET", metaKey, "opts.maxLenEvents", maxEvents)
  end
  return maxEvents
end
