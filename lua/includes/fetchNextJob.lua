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
--   {0, 0, 0, 0}           nothing ready, or paused / maxed
-- An id taken whose key is not a hash goes to failed (failUnreadableJob) and the next one is
-- taken, up to 100 a call; when those 100 leave no job, the marker is set so that the worker
-- fetches again.
-- Events: `waiting prev delayed` per promoted job, `active prev waiting` for the taken job
-- (`failed prev active`, with failedReason, when its key was not a hash).
-- @include promoteDelayedJobs
-- @include incrJobCounter
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include failUnreadableJob
-- @include takeNextJobId
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

  -- take the next id; one whose key is not a hash (the first write to it, a pcall'd HSET,
  -- errors with WRONGTYPE) goes to failed and the next is taken, up to 100 of them a call
  local jobId, jobKey
  local unreadable = 0
  while unreadable < 100 do
    jobId = takeNextJobId(k)
    if not jobId then
      break
    end
    jobKey = keyPrefix .. jobId
    local started
    if workerName ~= "" then
      started = redis.pcall("HSET", jobKey, "processedOn", now, "pb", workerName)
    else
      started = redis.pcall("HSET", jobKey, "processedOn", now)
    end
    if not (type(started) == "table" and started.err) then
      break
    end
    redis.call("LREM", k.active, 1, jobId)
    failUnreadableJob(keyPrefix, jobId, k.events, now, redis.call("TYPE", jobKey).ok)
    unreadable = unreadable + 1
    jobId = nil
  end

  if not jobId then
    if unreadable >= 100 then
      redis.call("ZADD", k.marker, "0", "0")  -- more may be left: the worker fetches again
    end
    local first = redis.call("ZRANGE", k.delayed, 0, 0, "WITHSCORES")
    if first[2] then
      return {0, 0, 0, math.floor(tonumber(first[2]) / 4096)}
    end
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
