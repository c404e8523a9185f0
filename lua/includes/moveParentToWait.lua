-- moveParentToWait(parentQueueKey, parentKey, parentId, now)
-- Release a parent (already taken out of waiting-children / delayed by the caller) on its own
-- queue (protocol §5.15): hash `delay` > 0 and `now` given → delayed at (now + delay) × 4096 with
-- marker "1" and event `delayed`; else priority > 0 → prioritized, else RPUSH wait (front = next
-- to run), marker "0" unless that queue is paused or maxed, event `waiting prev waiting-children`.
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include addDelayMarker
-- @include addJobWithPriority
local function moveParentToWait(parentQueueKey, parentKey, parentId, now)
  local pq = parentQueueKey .. ":"
  local attrs = redis.call("HMGET", parentKey, "priority", "delay")
  local priority = tonumber(attrs[1]) or 0
  local delay = tonumber(attrs[2]) or 0
  if delay > 0 and now then
    local due = now + delay
    redis.call("ZADD", pq .. "delayed", due * 4096, parentId)
    redis.call("XADD", pq .. "events", "*", "event", "delayed", "jobId", parentId, "delay", due)
    addDelayMarker(pq .. "marker", pq .. "delayed")
    return
  end
  if priority > 0 then
    addJobWithPriority(pq .. "prioritized", pq .. "pc", priority, parentId)
  else
    redis.call("RPUSH", pq .. "wait", parentId)
  end
  addBaseMarkerIfNeeded(pq .. "marker", isQueuePausedOrMaxed(pq .. "meta", pq .. "active"))
  redis.call("XADD", pq .. "events", "*", "event", "waiting", "jobId", parentId, "prev",
    "waiting-children")
end
