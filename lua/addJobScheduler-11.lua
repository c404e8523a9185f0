--[[
  addJobScheduler: create or replace job scheduler S and leave exactly ONE pending iteration.
  Stores hash `repeat:S` (DEL + HSET; `ic` and, for an unchanged `every`, `offset` are kept),
  `ZADD repeat M S`, and adds iteration job `repeat:S:M` from the template. A scheduler paused
  by pauseJobScheduler is so resumed: the rewritten hash has no `bullqPaused` mark and S leaves
  the set `bullq:paused-schedulers`. A previous iteration
  of S that has not started (delayed / wait / prioritized) is removed first; an active or
  finished one is left alone. Atomic, so concurrent upserts of one id leave one pending run.

  First iteration M (every): startDate if later than now; else, when `every` is unchanged and
  an iteration is pending, that iteration's time (an upsert does not move or skip it); else the
  aligned slot floor(now / every) * every + offset when an offset is given (ARGV[14]) or kept
  from an earlier upsert with the same `every` (never earlier than the current score); else
  now. If `repeat:S:M` exists, the next slots M + every are tried (32 at most). Stored
  offset = M mod every. For a cron pattern M is computed by the client (ARGV[4]), except that
  an iteration that is pending and already due (score <= now) is kept when the pattern, tz and
  startDate are unchanged: an upsert (a deploy while workers were down) does not skip a due run.
  When `repeat:S:M` exists (its run has started or finished: an upsert racing a worker, or a
  client clock behind), the pattern's following time ARGV[15] is taken instead.

  KEYS[1] repeat (zset)  KEYS[2] wait  KEYS[3] paused  KEYS[4] meta  KEYS[5] id  KEYS[6] delayed
  KEYS[7] prioritized    KEYS[8] pc    KEYS[9] events  KEYS[10] marker          KEYS[11] active

  ARGV[1]  keyPrefix   "<prefix>:<queue>:"
  ARGV[2]  schedulerId
  ARGV[3]  now         ms since epoch
  ARGV[4]  nextMillis  ms, first iteration of a cron pattern ("" for every)
  ARGV[5]  name        template job name
  ARGV[6]  data        template data JSON ("" = {})
  ARGV[7]  opts        template opts JSON, BullMQ short keys ("" = {})
  ARGV[8]  every       ms ("" for a pattern)
  ARGV[9]  pattern     cron pattern ("" for every)
  ARGV[10] tz          IANA time zone ("" none)
  ARGV[11] limit       max iterations ("" none)
  ARGV[12] startDate   ms ("" none)
  ARGV[13] endDate     ms ("" none)
  ARGV[14] offset      ms, alignment of `every` slots given by the caller ("" none)
  ARGV[15] followingMillis  ms, the cron occurrence after nextMillis ("" none, or every)

  Returns
    {jobId, delay}  the pending iteration's id and its delay (ms, >= 0)
    0               limit reached: S exists (in `repeat`, or paused), has created `limit`
                    iterations (ic) and none is pending, so an upsert (e.g. at every worker
                    start, or the resume of a paused S) does not restart it
    -10             pattern: iterations `repeat:S:M` and the following one exist already and
                    have started (nothing written)
    -11             every: 32 consecutive slots hold started iterations (nothing written)

  Events: removed (jobId, prev) for a replaced pending iteration; added; delayed or waiting.
]]
-- @include getMaxEvents
-- @include addSchedulerIteration
-- @include removePendingIteration
local keyPrefix = ARGV[1]
local schedulerId = ARGV[2]
local now = tonumber(ARGV[3])
local every = tonumber(ARGV[8])
local k = {KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10],
  KEYS[11]}
local schedulerKey = keyPrefix .. "repeat:" .. schedulerId
local iterationPrefix = schedulerKey .. ":"

local prevScore = redis.call("ZSCORE", KEYS[1], schedulerId)
local pendingId = nil
if prevScore then
  local candidate = "repeat:" .. schedulerId .. ":" .. prevScore
  if redis.call("ZSCORE", KEYS[6], candidate) or redis.call("ZSCORE", KEYS[7], candidate)
      or redis.call("LPOS", KEYS[2], candidate) then
    pendingId = candidate
  end
end

local function isFree(millis)
  local jobId = "repeat:" .. schedulerId .. ":" .. millis
  return jobId == pendingId or redis.call("EXISTS", keyPrefix .. jobId) == 0
end

local old = redis.call("HMGET", schedulerKey, "ic", "offset", "every", "pattern", "tz",
  "startDate")
local limit = tonumber(ARGV[11])
-- S exists (a `repeat` member, or only its hash: paused by pauseJobScheduler) and has
-- created `limit` runs, none pending: its schedule is over, whoever upserts it
if limit and (prevScore or old[1]) and not pendingId and tonumber(old[1] or 0) >= limit then
  return 0
end
local millis
local offset = nil
if every then
  local sameEvery = old[3] and tonumber(old[3]) == every
  local givenOffset = tonumber(ARGV[14])
  local keptOffset = nil
  if sameEvery then
    keptOffset = tonumber(old[2])
  end
  local startDate = tonumber(ARGV[12])
  if startDate and startDate > now then
    millis = startDate
  elseif pendingId and keptOffset and not givenOffset then
    millis = tonumber(prevScore)
  elseif givenOffset or keptOffset then
    millis = math.floor(now / every) * every + (givenOffset or keptOffset)
    if not givenOffset and prevScore and tonumber(prevScore) > millis then
      millis = tonumber(prevScore)
    end
  else
    millis = now
  end
  local tries = 0
  while not isFree(millis) do
    tries = tries + 1
    if tries >= 32 then
      return -11
    end
    millis = millis + every
  end
  offset = millis % every
else
  millis = tonumber(ARGV[4])
  if pendingId and tonumber(prevScore) <= now and old[4] == ARGV[9] and (old[5] or "") == ARGV[10]
      and (old[6] or "") == ARGV[12] then
    millis = tonumber(prevScore)
  end
  if not isFree(millis) then
    local following = tonumber(ARGV[15])
    if not following or not isFree(following) then
      return -10
    end
    millis = following
  end
end

local maxEvents = getMaxEvents(k[3])
if pendingId then
  removePendingIteration(k, keyPrefix, pendingId, maxEvents)
end

local ic = tonumber(old[1]) or 1
redis.call("DEL", schedulerKey)
local fields = {"name", ARGV[5], "ic", ic}
local optional = {{"data", ARGV[6]}, {"opts", ARGV[7]}, {"every", ARGV[8]},
  {"pattern", ARGV[9]}, {"tz", ARGV[10]}, {"limit", ARGV[11]}, {"startDate", ARGV[12]},
  {"endDate", ARGV[13]}}
for _, pair in ipairs(optional) do
  if pair[2] ~= "" and pair[2] ~= "{}" then
    table.insert(fields, pair[1])
    table.insert(fields, pair[2])
  end
end
if offset then
  table.insert(fields, "offset")
  table.insert(fields, offset)
end
redis.call("HSET", schedulerKey, unpack(fields))
redis.call("ZADD", KEYS[1], millis, schedulerId)
redis.call("SREM", keyPrefix .. "bullq:paused-schedulers", schedulerId)
local jobId, delay = addSchedulerIteration(k, keyPrefix, schedulerId, millis, ic, now, maxEvents)
return {jobId, delay}
