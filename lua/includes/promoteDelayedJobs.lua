-- promoteDelayedJobs(delayedKey, waitKey, prioritizedKey, pcKey, eventsKey, keyPrefix, now) -> count
-- Moves up to 1000 due delayed jobs to wait (priority 0) or prioritized; event `waiting prev delayed`.
-- A job key that is not a hash reads as priority 0 (hashField), so it reaches wait and the
-- fetch fails it (failUnreadableJob) instead of every fetch of the queue erroring here.
-- @include addJobWithPriority
-- @include hashField
local function promoteDelayedJobs(delayedKey, waitKey, prioritizedKey, pcKey, eventsKey, keyPrefix, now)
  local due = redis.call("ZRANGEBYSCORE", delayedKey, "0", (now + 1) * 4096 - 1, "LIMIT", "0", "1000")
  for _, jobId in ipairs(due) do
    redis.call("ZREM", delayedKey, jobId)
    local jobKey = keyPrefix .. jobId
    local priority = tonumber(hashField(jobKey, "priority") or 0) or 0
    if priority == 0 then
      redis.call("LPUSH", waitKey, jobId)
    else
      addJobWithPriority(prioritizedKey, pcKey, priority, jobId)
    end
    redis.call("XADD", eventsKey, "*", "event", "waiting", "jobId", jobId, "prev", "delayed")
    redis.pcall("HSET", jobKey, "delay", 0)  -- an error: not a hash (the fetch fails it)
  end
  return #due
end
