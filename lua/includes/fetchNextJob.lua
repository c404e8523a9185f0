-- fetchNextJob(k, keyPrefix, token, lockDuration, now, limiterMax, limiterDuration, workerName)
--   lockDuration (ms) and now (ms since epoch) as the ARGV text: they are written as they came
--   (a Lua number passed to redis.call is formatted again on every call).
--   k: table of queue keys {wait, active, prioritized, events, limiter, delayed, paused, meta, pc, marker}
-- The fetch transition (BullMQ moveToActive): promote due delayed jobs, apply the rate limit and
-- the paused / global-concurrency gates, take the next job (wait right end, then lowest
-- prioritized score), lock it with `token` for lockDuration ms and mark it started.
-- Returns BullMQ's tuple:
--   {fields, jobId, 0, 0}  a job was activated (fields = HGETALL of the job)
--   {0, 0, ttl, 0}         rate limited for ttl ms
--   {0, 0, 0, dueMs}       nothing ready; next delayed job due at dueMs
--   {0, 0, 0, 0}           nothing ready, or paused / maxed, or the taken id's key was not a
--                          hash: that job went to failed (failUnreadableJob) and the marker
--                          is set so that the worker fetches again at once
-- Events: `waiting prev delayed` per promoted job, `active prev waiting` for the taken job
-- (`failed prev active`, with failedReason, when its key was not a hash).
-- @include promoteDelayedJobs
-- @include incrJobCounter
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include failUnreadableJob
local function fetchNextJob(k, keyPrefix, token, lockDuration, now, limiterMax, limiterDuration, workerName)
  local pausedOrMaxed, globalMax, globalDuration = isQueuePausedOrMaxed(k.meta, k.active)
  local promoted = promoteDelayedJobs(k.delayed, k.wait, k.prioritized, k.pc, k.events, keyPrefix,
    tonumber(now))
  if promoted > 0 then
    addBaseMarkerIfNeeded(k.marker, pausedOrMaxed)
  end

  local maxJobs = tonumber(globalMax) or limiterMax
  if maxJobs and maxJobs <= 0 then
    maxJobs = nil
  end
  if maxJobs then
    local used = tonumber(redis.call("GET", k.limiter) or 0)
    if used >= maxJobs then
      local ttl = redis.call("PTTL", k.limiter)
      if ttl == 0 then
        redis.call("DEL", k.limiter)
      elseif ttl > 0 then
        return {0, 0, ttl, 0}
      end
    end
  end

  if pausedOrMaxed then
    return {0, 0, 0, 0}
  end

  local jobId = redis.call("RPOPLPUSH", k.wait, k.active)
  if jobId and string.sub(jobId, 1, 2) == "0:" then
    -- pre-5.0 marker id: discard it and take the next one
    redis.call("LREM", k.active, 1, jobId)
    jobId = redis.call("RPOPLPUSH", k.wait, k.active)
  end
  if not jobId then
    local popped = redis.call("ZPOPMIN", k.prioritized)
    if popped[1] then
      jobId = popped[1]
      redis.call("LPUSH", k.active, jobId)
    else
      redis.call("DEL", k.pc)
    end
  end

  if not jobId then
    local first = redis.call("ZRANGE", k.delayed, 0, 0, "WITHSCORES")
    if first[2] then
      return {0, 0, 0, math.floor(tonumber(first[2]) / 4096)}
    end
    return {0, 0, 0, 0}
  end

  local jobKey = keyPrefix .. jobId
  -- the first write to the job key; an error reply means it is not a hash (WRONGTYPE)
  local started
  if workerName ~= "" then
    started = redis.pcall("HSET", jobKey, "processedOn", now, "pb", workerName)
  else
    started = redis.pcall("HSET", jobKey, "processedOn", now)
  end
  if type(started) == "table" and started.err then
    redis.call("LREM", k.active, 1, jobId)
    failUnreadableJob(keyPrefix, jobId, k.events, now, redis.call("TYPE", jobKey).ok)
    redis.call("ZADD", k.marker, "0", "0")
    return {0, 0, 0, 0}
  end
  if maxJobs and redis.call("HEXISTS", jobKey, "defa") == 0 then
    local duration = tonumber(limiterDuration) or 0
    if duration <= 0 then
      duration = tonumber(globalDuration) or 0
    end
    if redis.call("INCR", k.limiter) == 1 and duration > 0 then
      redis.call("PEXPIRE", k.limiter, math.floor(math.abs(duration)))
    end
  end
  if token ~= "0" then
    redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  end
  redis.call("XADD", k.events, "*", "event", "active", "jobId", jobId, "prev", "waiting")
  incrJobCounter(jobKey, "ats")
  redis.call("ZADD", k.marker, "0", "0")
  return {redis.call("HGETALL", jobKey), jobId, 0, 0}
end
