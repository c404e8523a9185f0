--[[
  moveStalledJobsToWait: the two-phase stalled-job check shared by every worker of a queue
  (BullMQ's moveStalledJobsToWait). A job is stalled when it was in active at the previous check
  and still has no lock now. It goes back to the front of wait with `stc` + 1; past
  maxStalledCount it also gets `defa` so the next worker fails it without running it.

  KEYS[1] stalled   KEYS[2] wait    KEYS[3] active   KEYS[4] stalled-check
  KEYS[5] meta      KEYS[6] paused  KEYS[7] marker   KEYS[8] events

  ARGV[1] maxStalledCount  stalls allowed before the job is failed
  ARGV[2] keyPrefix        "<prefix>:<queue>:"
  ARGV[3] now              ms since epoch
  ARGV[4] stalledInterval  ms; at most one check per interval per queue (stalled-check PX)

  Returns the list of stalled job ids requeued by this call ({} when another worker checked
  within the interval).
  Events: waiting (jobId, prev active) per stalled job, then stalled (jobId) for each one that
  will run again; failed (jobId, failedReason, prev active) for a stalled id whose key is not a
  hash (failUnreadableJob: it goes to failed, not back to wait). The stall that exhausts maxStalledCount emits no `stalled`: the `failed`
  (prev active) written by the worker that fetches it is its one event (case B23 contract).
]]
-- @include getMaxEvents
-- @include incrJobCounter
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
-- @include failUnreadableJob
if redis.call("EXISTS", KEYS[4]) == 1 then
  return {}
end
redis.call("SET", KEYS[4], ARGV[3], "PX", ARGV[4])
local maxEvents = getMaxEvents(KEYS[5])
redis.call("XTRIM", KEYS[8], "MAXLEN", "~", maxEvents)

local maxStalledCount = tonumber(ARGV[1])
local keyPrefix = ARGV[2]
local requeued = {}
local candidates = redis.call("SMEMBERS", KEYS[1])
if #candidates > 0 then
  redis.call("DEL", KEYS[1])
  for _, jobId in ipairs(candidates) do
    if string.sub(jobId, 1, 2) == "0:" then
      redis.call("LREM", KEYS[3], 1, jobId)
    else
      local jobKey = keyPrefix .. jobId
      if redis.call("EXISTS", jobKey .. ":lock") == 0
          and redis.call("LREM", KEYS[3], 1, jobId) > 0 then
        local keyType = redis.call("TYPE", jobKey).ok
        if keyType ~= "hash" and keyType ~= "none" then
          failUnreadableJob(keyPrefix, jobId, KEYS[8], ARGV[3], keyType)
        else
          local stalledCount = incrJobCounter(jobKey, "stc")
          local failing = false
          if stalledCount > maxStalledCount then
            local rjk = redis.call("HGET", jobKey, "rjk")
            local liveScheduler = rjk and (redis.call("EXISTS", keyPrefix .. "repeat:" .. rjk) == 1
              or redis.call("ZSCORE", keyPrefix .. "repeat", rjk))
            if not liveScheduler then
              redis.call("HSET", jobKey, "defa", "job stalled more than allowable limit")
              failing = true
            end
          end
          redis.call("RPUSH", KEYS[2], jobId)
          addBaseMarkerIfNeeded(KEYS[7], isQueuePausedOrMaxed(KEYS[5], KEYS[3]))
          redis.call("XADD", KEYS[8], "*", "event", "waiting", "jobId", jobId, "prev", "active")
          if not failing then
            redis.call("XADD", KEYS[8], "*", "event", "stalled", "jobId", jobId)
          end
          table.insert(requeued, jobId)
        end
      end
    end
  end
end

local active = redis.call("LRANGE", KEYS[3], 0, -1)
for from = 1, #active, 7000 do
  local to = math.min(from + 6999, #active)
  redis.call("SADD", KEYS[1], unpack(active, from, to))
end
return requeued
