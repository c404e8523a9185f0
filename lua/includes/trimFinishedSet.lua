-- trimFinishedSet(setKey, keyPrefix, now, count, ageSeconds, limit, optsField)
-- Retention (removeOnComplete / removeOnFail) after a job finished: drops jobs older than
-- ageSeconds (0 = no age rule; at most `limit` per call) unless their own opts[optsField] keep
-- them longer, then all but the newest `count` (-1 = keep all).
-- @include removeJob
-- @include getKeepAge
local function trimFinishedSet(setKey, keyPrefix, now, count, ageSeconds, limit, optsField)
  if ageSeconds > 0 then
    local old = redis.call("ZRANGEBYSCORE", setKey, "-inf", now - ageSeconds * 1000, "WITHSCORES",
      "LIMIT", 0, limit)
    for i = 1, #old, 2 do
      local jobId, finishedOn = old[i], tonumber(old[i + 1])
      local ownAge, removeNow = getKeepAge(keyPrefix .. jobId, optsField, ageSeconds)
      -- ownAge 0: the job's own option keeps it (false / a count), so no age rule applies
      if removeNow or (ownAge > 0 and finishedOn <= now - ownAge * 1000) then
        removeJob(keyPrefix, jobId, true)
        redis.call("ZREM", setKey, jobId)
      end
    end
  end
  if count >= 0 then
    local extra = redis.call("ZREVRANGE", setKey, count, count + limit - 1)
    for _, jobId in ipairs(extra) do
      removeJob(keyPrefix, jobId, true)
    end
    if #extra > 0 then
      redis.call("ZREM", setKey, unpack(extra))
    end
  end
end
