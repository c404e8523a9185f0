-- addDelayMarker(markerKey, delayedKey)
-- Marker "1" scored with the due time (ms) of the earliest delayed job; nothing if none.
local function addDelayMarker(markerKey, delayedKey)
  local first = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if first[2] then
    redis.call("ZADD", markerKey, math.floor(tonumber(first[2]) / 4096), "1")
  end
end
