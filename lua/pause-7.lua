--[[
  pause: pause or resume a queue with BullMQ v6 semantics (jobs stay in wait; only meta.paused).
  On resume, ids left in a legacy v5 `paused` list are moved onto wait (up to 7000 per call).

  KEYS[1] wait     KEYS[2] paused (legacy list)   KEYS[3] meta   KEYS[4] prioritized
  KEYS[5] events   KEYS[6] delayed                KEYS[7] marker

  ARGV[1] state  "paused" | "resumed"

  Returns the number of ids still in the legacy paused list (call resume again while > 0).
  Events: paused / resumed (no fields).
]]
-- @include addDelayMarker
if ARGV[1] == "paused" then
  redis.call("HSET", KEYS[3], "paused", 1)
  redis.call("DEL", KEYS[7])
  redis.call("XADD", KEYS[5], "*", "event", "paused")
  return 0
end

redis.call("HDEL", KEYS[3], "paused")
local remaining = 0
if redis.call("EXISTS", KEYS[2]) == 1 then
  if redis.call("EXISTS", KEYS[1]) == 0 then
    redis.call("RENAME", KEYS[2], KEYS[1])
  else
    local ids = redis.call("LRANGE", KEYS[2], 0, 6999)
    if #ids > 0 then
      redis.call("RPUSH", KEYS[1], unpack(ids))
      redis.call("LTRIM", KEYS[2], #ids, -1)
    end
    remaining = redis.call("LLEN", KEYS[2])
  end
end
if redis.call("LLEN", KEYS[1]) + redis.call("ZCARD", KEYS[4]) > 0 then
  redis.call("ZADD", KEYS[7], 0, "0")
else
  addDelayMarker(KEYS[7], KEYS[6])
end
redis.call("XADD", KEYS[5], "*", "event", "resumed")
return remaining
