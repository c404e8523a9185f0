--[[
  updateJobScheduler: called by a worker when it activates an iteration of scheduler S; adds the
  next iteration. Guard: proceeds only while `repeat` holds S with score M and the activated
  job (producer) is `repeat:S:M`, so a second worker, a re-fetch after a stall or a stale call
  cannot create a second pending iteration. Next M' (every): M + every, or the first slot
  M + n * every that is not in the past; (pattern): ARGV[5], computed by the client.
  Stops (nothing written) when `ic` + 1 > limit or M' > endDate.

  KEYS[1] repeat (zset)  KEYS[2] wait  KEYS[3] paused  KEYS[4] meta  KEYS[5] id  KEYS[6] delayed
  KEYS[7] prioritized    KEYS[8] pc    KEYS[9] events  KEYS[10] marker          KEYS[11] active

  ARGV[1] keyPrefix   "<prefix>:<queue>:"
  ARGV[2] schedulerId
  ARGV[3] producerId  id of the iteration job being activated
  ARGV[4] now         ms since epoch
  ARGV[5] nextMillis  ms, next cron occurrence ("" for every, or when the pattern has none)

  Returns
    jobId  the next iteration was added (`ZADD repeat M' S`, `HINCRBY repeat:S ic 1`)
    0      S does not exist, is a v5 legacy repeatable entry (no `ic`), or the producer is not
           its current iteration (nothing written)
    1      the schedule is over: limit reached, past endDate, or no next cron time
    2      `repeat:S:M'` exists already (event duplicated)

  Events: added; delayed or waiting; or duplicated (jobId).
]]
-- @include getMaxEvents
-- @include addSchedulerIteration
local keyPrefix = ARGV[1]
local schedulerId = ARGV[2]
local now = tonumber(ARGV[4])
local k = {KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10],
  KEYS[11]}
local score = redis.call("ZSCORE", KEYS[1], schedulerId)
if not score or ARGV[3] ~= "repeat:" .. schedulerId .. ":" .. score then
  return 0
end
local prev = tonumber(score)
local s = redis.call("HMGET", keyPrefix .. "repeat:" .. schedulerId, "every", "limit", "endDate",
  "ic")
if not s[4] then
  return 0
end
local ic = tonumber(s[4])
if s[2] and ic + 1 > tonumber(s[2]) then
  return 1
end
local millis
local every = tonumber(s[1])
if every then
  millis = prev + every
  if millis < now then
    millis = prev + math.ceil((now - prev) / every) * every
  end
else
  millis = tonumber(ARGV[5])
  if not millis then
    return 1
  end
end
if s[3] and millis > tonumber(s[3]) then
  return 1
end
local maxEvents = getMaxEvents(k[3])
local jobId = "repeat:" .. schedulerId .. ":" .. millis
if redis.call("EXISTS", keyPrefix .. jobId) == 1 then
  redis.call("XADD", k[8], "MAXLEN", "~", maxEvents, "*", "event", "duplicated", "jobId", jobId)
  return 2
end
redis.call("ZADD", KEYS[1], millis, schedulerId)
ic = redis.call("HINCRBY", keyPrefix .. "repeat:" .. schedulerId, "ic", 1)
return addSchedulerIteration(k, keyPrefix, schedulerId, millis, ic, now, maxEvents)
