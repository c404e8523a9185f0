-- moveJobsToWait(setKey, waitKey, eventsKey, keyPrefix, maxScore, count, prevState, maxEvents)
--   -> number of jobs moved
-- Moves up to `count` ids with score <= maxScore from a sorted set (delayed, failed, completed)
-- to the head of wait (LPUSH, priorities ignored, as BullMQ's moveJobsToWait). Retried finished
-- jobs lose finishedOn, processedOn and their result field and rejoin their parent's
-- dependencies; promoted delayed jobs get delay 0. Event: waiting (jobId, prev prevState).
-- @include reattachToParent
local function moveJobsToWait(setKey, waitKey, eventsKey, keyPrefix, maxScore, count, prevState,
                              maxEvents)
  local ids = redis.call("ZRANGEBYSCORE", setKey, "-inf", maxScore, "LIMIT", 0, count)
  for _, jobId in ipairs(ids) do
    local jobKey = keyPrefix .. jobId
    redis.call("ZREM", setKey, jobId)
    -- pcall: a key that is not a hash (written over by hand) still moves to wait, where the
    -- fetch fails it with its reason (failUnreadableJob), instead of this erroring half-way
    if prevState == "delayed" then
      redis.pcall("HSET", jobKey, "delay", 0)
    else
      local field = prevState == "failed" and "failedReason" or "returnvalue"
      redis.pcall("HDEL", jobKey, "finishedOn", "processedOn", field)
      reattachToParent(jobKey)
    end
    redis.call("LPUSH", waitKey, jobId)
    redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId,
      "prev", prevState)
  end
  return #ids
end
