-- isQueuePausedOrMaxed(metaKey, activeKey) -> pausedOrMaxed, limiterMax, limiterDuration
-- pausedOrMaxed: true when meta.paused exists, or meta.concurrency is set and LLEN active >=
-- concurrency. Also returns the global rate limit, meta `max` and `duration` (ms), as stored
-- (strings, false when absent), read by the same HMGET so a fetch reads meta once.
local function isQueuePausedOrMaxed(metaKey, activeKey)
  local meta = redis.call("HMGET", metaKey, "paused", "concurrency", "max", "duration")
  if meta[1] then
    return true, meta[3], meta[4]
  end
  if meta[2] then
    return redis.call("LLEN", activeKey) >= tonumber(meta[2]), meta[3], meta[4]
  end
  return false, meta[3], meta[4]
end
