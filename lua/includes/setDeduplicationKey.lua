-- setDeduplicationKey(deKey, jobId, ttl, keepLastIfActive)
-- Points `de:<id>` at jobId: with PX ttl (ms) in throttle mode; without TTL in simple mode and
-- with keepLastIfActive (that key must live as long as its job, so it is released at finish).
local function setDeduplicationKey(deKey, jobId, ttl, keepLastIfActive)
  if ttl > 0 and not keepLastIfActive then
    redis.call("SET", deKey, jobId, "PX", ttl)
  else
    redis.call("SET", deKey, jobId)
  end
end
