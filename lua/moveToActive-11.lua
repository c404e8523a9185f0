--[[
  moveToActive: fetch the next job for a worker (BullMQ's moveToActive, v6 layout).

  KEYS[1..11] wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker
  ARGV[1] keyPrefix        "<prefix>:<queue>:"
  ARGV[2] token            lock token ("0" = do not lock)
  ARGV[3] lockDuration     ms
  ARGV[4] now              ms since epoch (client clock)
  ARGV[5] limiterMax       worker limiter max jobs per window (0 = none)
  ARGV[6] limiterDuration  worker limiter window, ms (0 = use meta.duration)
  ARGV[7] workerName       written as `pb` when non-empty

  Returns
    {fields, jobId, 0, 0}  job activated and locked
    {0, 0, ttl, 0}         rate limited, retry in ttl ms
    {0, 0, 0, dueMs}       nothing ready; next delayed job due at dueMs
    {0, 0, 0, 0}           nothing ready, or queue paused / at global concurrency, or the
                           id taken had a key that is not a hash: that job went to failed
                           and the marker is set, so the worker fetches again at once

  Events: waiting (prev delayed) per promoted job; active (prev waiting); failed (failedReason,
  prev active) for a taken id whose key is not a hash.
]]
-- @include fetchKeys
-- @include fetchNextJob
return fetchNextJob(fetchKeys(), ARGV[1], ARGV[2], ARGV[3], ARGV[4],
  tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7])
