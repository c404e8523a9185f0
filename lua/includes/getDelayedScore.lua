-- getDelayedScore(delayedKey, dueMs) -> score
-- Score = due ms * 4096 + sequence; the sequence orders jobs due in the same millisecond.
local function getDelayedScore(delayedKey, dueMs)
  local base = dueMs * 4096
  local last = redis.call("ZREVRANGEBYSCORE", delayedKey, base + 4095, base, "WITHSCORES", "LIMIT", 0, 1)
  if last[2] then
    local nextScore = tonumber(last[2]) + 1
    if nextScore > base + 4095 then
      nextScore = base + 4095
    end
    return nextScore
  end
  return base
end
