-- removePendingIteration(k, keyPrefix, jobId, maxEvents) -> boolean
-- Removes scheduler iteration jobId if it has not started (delayed, wait or prioritized), with
-- its keys and a `removed` event (prev = that state). Active or finished iterations are left.
-- k = {wait, paused, meta, id, delayed, prioritized, pc, events, marker, active} (keys).
-- @include removeJob
local function removePendingIteration(k, keyPrefix, jobId, maxEvents)
  local prev = nil
  if redis.call("ZREM", k[5], jobId) == 1 then
    prev = "delayed"
  elseif redis.call("ZREM", k[6], jobId) == 1 then
    prev = "prioritized"
  elseif redis.call("LREM", k[1], 0, jobId) > 0 then
    prev = "wait"
  end
  if not prev then
    return false
  end
  removeJob(keyPrefix, jobId)
  redis.call("XADD", k[8], "MAXLEN", "~", maxEvents, "*", "event", "removed", "jobId", jobId,
    "prev", prev)
  return true
end
