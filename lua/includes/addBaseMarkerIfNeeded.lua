-- addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
-- Marker "0" (score 0) tells blocked workers that a job is ready now.
local function addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
  if not pausedOrMaxed then
    redis.call("ZADD", markerKey, "0", "0")
  end
end
