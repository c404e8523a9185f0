-- isQueuePausedOrMaxed(metaKey, activeKey) -> boolean
-- True when meta.paused exists, or meta.concurrency is set and LLEN active >= concurrency.
local function isQueuePausedOrMaxed(metaKey, activeKey)
  local meta = redis.call("HMGET", metaKey, "paused", "concurrency")
  if meta[1] then
    return true
  end
  if meta[2] then
    return redis.call("LLEN", activeKey) >= tonumber(meta[2])
  end
  return false
end
