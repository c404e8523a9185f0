--[[
  pauseJobScheduler: pause job scheduler S, a transition BullMQ does not have
  (docs/schedulers.md, "Pausing one scheduler"). S leaves the `repeat` zset, which is all a
  worker (ours, Node's or PyPI's) follows, so nothing adds runs of it; its hash `repeat:S` stays
  (template, `ic` iteration count and `offset` kept) with one more field, `bullqPaused` = now;
  its id joins the set `bullq:paused-schedulers` of the queue; its pending run
  `repeat:S:<next>` is removed unless it has started (an active run finishes and, finding no
  `repeat` member, adds no next one). Resuming is an upsert (addJobScheduler), which rewrites
  the hash without the field and leaves the set.
  The queue keys other than `repeat` are derived from keyPrefix (same hash slot).

  KEYS[1] repeat (zset)

  ARGV[1] keyPrefix   "<prefix>:<queue>:"
  ARGV[2] schedulerId
  ARGV[3] now         ms since epoch (the value of `bullqPaused`)

  Returns
    {1, runId}  paused; runId = the pending run removed, "" when none was pending
    0           no such scheduler (no hash `repeat:S`)
    2           S is paused already (nothing written)
    3           its schedule is over (nothing written): no run is pending and it has made
                its `limit` runs or its end date has passed; or it has a hash but no
                `repeat` member and no mark (a legacy entry)

  Events: removed (jobId, prev = delayed / wait / prioritized) for the pending run.
]]
-- @include getMaxEvents
-- @include removePendingIteration
local keyPrefix = ARGV[1]
local schedulerId = ARGV[2]
local schedulerKey = keyPrefix .. "repeat:" .. schedulerId
if redis.call("EXISTS", schedulerKey) == 0 then
  return 0
end
local score = redis.call("ZSCORE", KEYS[1], schedulerId)
if not score then
  if redis.call("HEXISTS", schedulerKey, "bullqPaused") == 1 then
    return 2
  end
  return 3
end
local k = {}
for i, suffix in ipairs({"wait", "paused", "meta", "id", "delayed", "prioritized", "pc",
    "events", "marker", "active"}) do
  k[i] = keyPrefix .. suffix
end
local runId = "repeat:" .. schedulerId .. ":" .. score
local pending = redis.call("ZSCORE", k[5], runId) or redis.call("ZSCORE", k[6], runId)
  or redis.call("LPOS", k[1], runId)
if not pending then
  -- nothing pending: over when it has made its `limit` runs or its end date has passed
  local fields = redis.call("HMGET", schedulerKey, "ic", "limit", "endDate")
  local limit, endDate = tonumber(fields[2]), tonumber(fields[3])
  if (limit and (tonumber(fields[1]) or 0) >= limit)
      or (endDate and endDate <= tonumber(ARGV[3])) then
    return 3
  end
end
redis.call("ZREM", KEYS[1], schedulerId)
redis.call("HSET", schedulerKey, "bullqPaused", ARGV[3])
redis.call("SADD", keyPrefix .. "bullq:paused-schedulers", schedulerId)
if removePendingIteration(k, keyPrefix, runId, getMaxEvents(k[3])) then
  return {1, runId}
end
return {1, ""}
