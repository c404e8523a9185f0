--[[
  addJob: create a job and put it in wait (FIFO or LIFO), prioritized or delayed.
  One script for BullMQ's addStandardJob / addPrioritizedJob / addDelayedJob; the same routing:
  delay > 0 wins over priority; priority > 0 goes to prioritized; otherwise wait.

  KEYS[1] wait         KEYS[2] paused (legacy v5 list, never written)
  KEYS[3] meta         KEYS[4] id (job id counter)
  KEYS[5] delayed      KEYS[6] prioritized
  KEYS[7] pc           KEYS[8] events
  KEYS[9] marker       KEYS[10] active

  ARGV[1]  keyPrefix   "<prefix>:<queue>:"
  ARGV[2]  jobId       custom job id, "" for an auto id (INCR id)
  ARGV[3]  name        job name
  ARGV[4]  data        JSON text
  ARGV[5]  opts        JSON text (BullMQ short keys already applied by the client)
  ARGV[6]  timestamp   creation time, ms since epoch
  ARGV[7]  delay       ms (0 = none)
  ARGV[8]  priority    0 = none, 1 (highest) .. 2097151
  ARGV[9]  lifo        "1" to push at the head of wait
  ARGV[10] parentKey   full parent job key, "" for none
  ARGV[11] parent      JSON {"id", "queueKey", ...}, "" for none

  Deduplication (opts.de, protocol §5.14; includes/deduplicateJob.lua): keys `de:<id>` and
  `dn:<id>` are derived from keyPrefix; the new job gets `deid`.

  Returns
    jobId (string)  the new job's id, or the existing job's id for a duplicate custom id,
                    or the id of the job owning the deduplication id when the add is absorbed
    -5              parentKey given but the parent job does not exist (nothing written)

  Events: added (jobId, name); then waiting (jobId) or delayed (jobId, delay = due ms);
          duplicated (jobId) when the custom id exists already; deduplicated (jobId,
          deduplicationId, deduplicatedJobId) and removed (jobId, prev delayed) by deduplication.
]]
-- @include getMaxEvents
-- @include enqueueNewJob
-- @include storeJobHash
-- @include deduplicateJob
local keyPrefix = ARGV[1]
local parentKey = ARGV[10]
if parentKey ~= "" and redis.call("EXISTS", parentKey) == 0 then
  return -5
end

local counter = redis.call("INCR", KEYS[4])
local maxEvents = getMaxEvents(KEYS[3])
local jobId = ARGV[2]
if jobId == "" then
  jobId = tostring(counter)
end
local jobKey = keyPrefix .. jobId

if redis.call("EXISTS", jobKey) == 1 then
  redis.call("XADD", KEYS[8], "MAXLEN", "~", maxEvents, "*", "event", "duplicated", "jobId", jobId)
  return jobId
end

local owner = deduplicateJob(keyPrefix, jobId, ARGV[5], ARGV[3], ARGV[4], parentKey, ARGV[11],
  KEYS[8], KEYS[5], maxEvents, tonumber(ARGV[6]), tonumber(ARGV[7]) or 0)
if owner then
  return owner
end

local timestamp, delay, priority = storeJobHash(jobKey, jobId, ARGV[3], ARGV[4], ARGV[5],
  ARGV[6], ARGV[7], ARGV[8], parentKey, ARGV[11], KEYS[8])

local addKeys = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8],
  KEYS[9], KEYS[10]}
enqueueNewJob(addKeys, jobId, delay > 0 and timestamp + delay or 0, priority, ARGV[9] == "1",
  maxEvents)

if parentKey ~= "" then
  redis.call("SADD", parentKey .. ":dependencies", jobKey)
end
return jobId
