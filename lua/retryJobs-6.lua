--[[
  retryJobs: move up to `count` failed (or completed) jobs that finished at or before
  `timestamp` back to wait (BullMQ's Queue.retryJobs / moveJobsToWait). finishedOn, processedOn
  and failedReason (returnvalue) are deleted; `atm` is kept; a child rejoins its parent's
  dependencies. Priorities are ignored (head of wait). The caller repeats while a call moved
  `count` jobs.

  KEYS[1] wait   KEYS[2] active   KEYS[3] meta   KEYS[4] events   KEYS[5] marker
  KEYS[6] source set: failed | completed

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] count      max jobs moved by this call (> 0)
  ARGV[3] timestamp  ms; only jobs with finishedOn <= timestamp move
  ARGV[4] state      "failed" | "completed" (the source set's name)

  Returns the number of jobs moved.
  Events: waiting (jobId, prev <state>) per job (MAXLEN ~).
]]
-- @include moveJobsToWait
-- @include getMaxEvents
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
local moved = moveJobsToWait(KEYS[6], KEYS[1], KEYS[4], ARGV[1], tonumber(ARGV[3]),
  tonumber(ARGV[2]), ARGV[4], getMaxEvents(KEYS[3]))
if moved > 0 then
  addBaseMarkerIfNeeded(KEYS[5], isQueuePausedOrMaxed(KEYS[3], KEYS[2]))
end
return moved
