-- enqueueNewJob(k, jobId, due, priority, lifo, maxEvents)
--   k: the add keys in this order: wait, paused, meta, id, delayed, prioritized, pc, events,
--      marker, active (a script's KEYS when it takes them in that order)
-- Puts a freshly stored job where it waits to run: delayed until `due` (ms; 0 = not delayed),
-- else prioritized (priority > 0), else wait (head when lifo). Emits `delayed` (delay = due ms)
-- or `waiting`, and the matching marker.
-- @include getDelayedScore
-- @include addDelayMarker
-- @include addJobWithPriority
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
local function enqueueNewJob(k, jobId, due, priority, lifo, maxEvents)
  if due > 0 then
    redis.call("ZADD", k[5], getDelayedScore(k[5], due), jobId)
    redis.call("XADD", k[8], "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", jobId,
      "delay", due)
    addDelayMarker(k[9], k[5])
    return
  end
  if priority > 0 then
    addJobWithPriority(k[6], k[7], priority, jobId)
  elseif lifo then
    redis.call("RPUSH", k[1], jobId)
  else
    redis.call("LPUSH", k[1], jobId)
  end
  redis.call("XADD", k[8], "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId)
  addBaseMarkerIfNeeded(k[9], isQueuePausedOrMaxed(k[3], k[10]))
end
