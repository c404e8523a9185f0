--[[
  promoteJobs: move up to `count` delayed jobs to wait now, whatever their due time (BullMQ's
  Queue.promoteJobs; like BullMQ, priorities are ignored: every job goes to the head of wait).
  The caller repeats while a call moved `count` jobs.

  KEYS[1] wait   KEYS[2] active   KEYS[3] meta   KEYS[4] events   KEYS[5] marker
  KEYS[6] delayed

  ARGV[1] keyPrefix  "<prefix>:<queue>:"
  ARGV[2] count      max jobs moved by this call (> 0)

  Returns the number of jobs moved (0 when delayed is empty).
  Events: waiting (jobId, prev delayed) per job (MAXLEN ~ meta opts.maxLenEvents).
]]
-- @include moveJobsToWait
-- @include getMaxEvents
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
local moved = moveJobsToWait(KEYS[6], KEYS[1], KEYS[4], ARGV[1], "+inf", tonumber(ARGV[2]),
  "delayed", getMaxEvents(KEYS[3]))
if moved > 0 then
  addBaseMarkerIfNeeded(KEYS[5], isQueuePausedOrMaxed(KEYS[3], KEYS[2]))
end
return moved
