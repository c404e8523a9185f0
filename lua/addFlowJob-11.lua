--[[
  addFlowJob: add one node of a flow (FlowProducer). The client sends a whole tree in one
  MULTI, children before their parent (post-order), so a parent is added knowing whether any of
  its children is still pending: with pending children it goes to waiting-children, otherwise
  it is enqueued at once (BullMQ's deferred "release if no pending dependencies", done inline).
  Leaves are enqueued as addJob does: delay > 0 → delayed, priority > 0 → prioritized, else wait.

  KEYS[1] wait         KEYS[2] paused (legacy v5 list, never written)
  KEYS[3] meta         KEYS[4] id (job id counter)
  KEYS[5] delayed      KEYS[6] prioritized
  KEYS[7] pc           KEYS[8] events
  KEYS[9] marker       KEYS[10] active
  KEYS[11] waiting-children

  ARGV[1]  keyPrefix   "<prefix>:<queue>:"
  ARGV[2]  jobId       the node's id (flows always give one: custom or a UUID v4)
  ARGV[3]  name        job name
  ARGV[4]  data        JSON text
  ARGV[5]  opts        JSON text (BullMQ short keys already applied by the client)
  ARGV[6]  timestamp   creation time, ms since epoch (waiting-children score)
  ARGV[7]  delay       ms (0 = none)
  ARGV[8]  priority    0 = none, 1 (highest) .. 2097151
  ARGV[9]  lifo        "1" to push at the head of wait
  ARGV[10] parentKey   full parent job key, "" for none
  ARGV[11] parent      JSON {"id", "queueKey", "fpof"?, "cpof"?, "idof"?, "rdof"?}, "" for none
  ARGV[12] parentLater "1" when the parent is added later in the same transaction (no -5 check)
  ARGV[13] hasChildren "1" for a node whose children were added before it

  Returns
    jobId (string)  the node's id (also for a duplicate id: the existing job is attached to
                    the parent if it has no other live parent; a completed one counts as done)
    -5              parentKey given, parentLater not set, and the parent does not exist
    -7              the existing job of a duplicate id belongs to another existing parent

  Events: added (jobId, name); then waiting-children (jobId), waiting (jobId) or
          delayed (jobId, delay = due ms); duplicated (jobId) for an existing id.
]]
-- @include getMaxEvents
-- @include enqueueNewJob
-- @include storeJobHash
local keyPrefix, jobId, parentKey = ARGV[1], ARGV[2], ARGV[10]
if parentKey ~= "" and ARGV[12] ~= "1" and redis.call("EXISTS", parentKey) == 0 then
  return -5
end

redis.call("INCR", KEYS[4])
local maxEvents = getMaxEvents(KEYS[3])
local jobKey = keyPrefix .. jobId

if redis.call("EXISTS", jobKey) == 1 then
  if parentKey ~= "" then
    local current = redis.call("HGET", jobKey, "parentKey")
    if current and current ~= parentKey and redis.call("EXISTS", current) == 1 then
      return -7
    end
    if redis.call("ZSCORE", keyPrefix .. "completed", jobId) then
      redis.call("HSET", parentKey .. ":processed", jobKey,
        redis.call("HGET", jobKey, "returnvalue") or "null")
    else
      redis.call("SADD", parentKey .. ":dependencies", jobKey)
    end
    redis.call("HSET", jobKey, "parentKey", parentKey, "parent", ARGV[11])
  end
  redis.call("XADD", KEYS[8], "MAXLEN", "~", maxEvents, "*", "event", "duplicated", "jobId", jobId)
  return jobId
end

local timestamp, delay, priority = storeJobHash(jobKey, jobId, ARGV[3], ARGV[4], ARGV[5],
  ARGV[6], ARGV[7], ARGV[8], parentKey, ARGV[11], KEYS[8])

if ARGV[13] == "1" and redis.call("SCARD", jobKey .. ":dependencies") > 0 then
  redis.call("ZADD", KEYS[11], timestamp, jobId)
  redis.call("XADD", KEYS[8], "MAXLEN", "~", maxEvents, "*", "event", "waiting-children",
    "jobId", jobId)
else
  enqueueNewJob(KEYS, jobId, delay > 0 and timestamp + delay or 0, priority, ARGV[9] == "1",
    maxEvents)
end

if parentKey ~= "" then
  redis.call("SADD", parentKey .. ":dependencies", jobKey)
end
return jobId
