--[[
  moveToFinished: an active job ends in completed or failed; optionally fetch the next job in the
  same call (BullMQ's moveToFinished, v6 layout), so a busy worker pays one round trip per job.

  KEYS[1..11] wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker
  KEYS[12] target set: completed or failed
  KEYS[13] job key

  ARGV[1]  keyPrefix        "<prefix>:<queue>:"
  ARGV[2]  jobId
  ARGV[3]  now              ms since epoch
  ARGV[4]  target           "completed" | "failed"
  ARGV[5]  value            returnvalue (JSON text) or failedReason (plain text)
  ARGV[6]  token            lock token ("0" = skip the lock check)
  ARGV[7]  keepCount        jobs to keep in the target set: -1 all, 0 none (remove this job), N
  ARGV[8]  keepAge          s; finished jobs older than this are removed (0 = no age rule)
  ARGV[9]  keepLimit        max jobs removed per call by the age rule
  ARGV[10] fetchNext        "1" to activate the next job with the same token
  ARGV[11] lockDuration     ms (fetch-next)
  ARGV[12] limiterMax       (fetch-next) 0 = none
  ARGV[13] limiterDuration  ms (fetch-next)
  ARGV[14] workerName       (fetch-next) `pb` field
  ARGV[15] attempts         job opts.attempts, for retries-exhausted
  ARGV[16] stacktrace       JSON array text, "" to leave the field alone (failed only)
  ARGV[17] maxMetricsSize   per-minute metrics points kept (worker metrics.maxDataPoints);
                            absent, "" or 0 = metrics off (keys metrics:<target>[:data])

  Returns
    0                         finished, nothing fetched
    {fields, jobId, 0, 0}     finished and the next job was activated (see moveToActive)
    {0, 0, ttl, 0} / {0, 0, 0, dueMs} / {0, 0, 0, 0}   finished; fetch-next found nothing ready
    -1 job missing (or its key is not a hash: the job then went to failed, with a failed
       event naming why), -2 lock missing, -3 not in active, -4 pending children,
    -6 lock owned by another token, -9 failed children

  Events: completed (jobId, returnvalue, prev active) or failed (jobId, failedReason, prev active);
          retries-exhausted (jobId, attemptsMade) on failed with atm >= attempts;
          added + waiting / delayed for a keepLastIfActive job parked in `dn:<deid>`;
          drained when wait, active and prioritized are empty (not after a fetch-next that
          found the queue paused or at global concurrency);
          fetch-next: waiting (jobId, prev delayed) per promoted job, active (jobId, prev waiting),
          or failed (jobId, failedReason, prev active) for a next id whose key is not a hash;
          on the parent's queue when this child releases its parent (updateParentOnFinish):
          waiting (jobId, prev waiting-children) or delayed (jobId, delay = due ms).
]]
-- @include fetchKeys
-- @include incrJobCounter
-- @include fetchNextJob
-- @include isQueuePausedOrMaxed
-- @include getMaxEvents
-- @include releaseActiveJob
-- @include failUnreadableJob
-- @include trimFinishedSet
-- @include removeJob
-- @include releaseDeduplicationKey
-- @include updateParentOnFinish
-- @include requeueDeduplicatedNextJob
-- @include collectMetrics
local k = fetchKeys()
local keyPrefix, jobId, now, target = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local jobKey = KEYS[13]

local keyType = redis.call("TYPE", jobKey).ok
if keyType == "none" then
  return -1
end
if keyType ~= "hash" then
  -- overwritten while it ran (a string written there by hand): it cannot be finished the
  -- usual way, so it leaves active for failed with the reason (failUnreadableJob)
  local released = releaseActiveJob(jobKey, jobId, ARGV[6], k.stalled, k.active, nil)
  if released < 0 then
    return released
  end
  failUnreadableJob(keyPrefix, jobId, k.events, ARGV[3], keyType)
  return -1
end
if target == "completed" then
  if redis.call("SCARD", jobKey .. ":dependencies") > 0 then
    return -4
  end
  if redis.call("ZCARD", jobKey .. ":unsuccessful") > 0 then
    return -9
  end
end
local released = releaseActiveJob(jobKey, jobId, ARGV[6], k.stalled, k.active,
  ARGV[16] ~= "" and {ARGV[5], ARGV[16]} or nil)
if released < 0 then
  return released
end
-- the job's links, read once: parent (updateParentOnFinish) and deduplication id
local link = redis.call("HMGET", jobKey, "parentKey", "parent", "deid")
local deid = link[3]
releaseDeduplicationKey(keyPrefix, deid, jobId)

local maxEvents = getMaxEvents(k.meta)
redis.call("XTRIM", k.events, "MAXLEN", "~", maxEvents)
requeueDeduplicatedNextJob(k, keyPrefix, deid, now, maxEvents)

local field = "returnvalue"
if target == "failed" then
  field = "failedReason"
end
local keepCount = tonumber(ARGV[7])
updateParentOnFinish(jobKey, link[1], link[2], target, ARGV[5], now, keepCount == 0)
local attemptsMade = incrJobCounter(jobKey, "atm")
if keepCount == 0 then
  removeJob(keyPrefix, jobId, true)
else
  -- ARGV[3], not `now`: a Lua number passed to redis.call is formatted again on every call
  redis.call("ZADD", KEYS[12], ARGV[3], jobId)
  redis.call("HSET", jobKey, field, ARGV[5], "finishedOn", ARGV[3])
  if target == "failed" then
    redis.call("HDEL", jobKey, "defa")
  end
  trimFinishedSet(KEYS[12], keyPrefix, now, keepCount, tonumber(ARGV[8]), tonumber(ARGV[9]),
    target == "completed" and "removeOnComplete" or "removeOnFail")
end

redis.call("XADD", k.events, "*", "event", target, "jobId", jobId, field, ARGV[5], "prev", "active")
if target == "failed" and attemptsMade >= (tonumber(ARGV[15]) or 0) then
  redis.call("XADD", k.events, "*", "event", "retries-exhausted", "jobId", jobId,
    "attemptsMade", attemptsMade)
end
collectMetrics(keyPrefix, target, ARGV[17], now)

if ARGV[10] == "1" then
  local fetched = fetchNextJob(k, keyPrefix, ARGV[6], ARGV[11], ARGV[3], tonumber(ARGV[12]),
    tonumber(ARGV[13]), ARGV[14])
  -- paused / at global concurrency: {0, 0, 0, 0} at once, without `drained` (as BullMQ)
  if fetched[2] ~= 0 or fetched[3] ~= 0 or fetched[4] ~= 0
      or isQueuePausedOrMaxed(k.meta, k.active) then
    return fetched
  end
end

if redis.call("LLEN", k.wait) == 0 and redis.call("LLEN", k.active) == 0
    and redis.call("ZCARD", k.prioritized) == 0 then
  redis.call("XADD", k.events, "*", "event", "drained")
end
return 0
