-- isCurrentSchedulerIteration(keyPrefix, jobId) -> boolean
-- True when the job is the pending iteration of a job scheduler (`rjk` set and the id equals
-- "repeat:<rjk>:<ZSCORE repeat rjk>"): maintenance operations must leave it in place.
-- @include hashField
local function isCurrentSchedulerIteration(keyPrefix, jobId)
  local rjk = hashField(keyPrefix .. jobId, "rjk")
  if not rjk then
    return false
  end
  local score = redis.call("ZSCORE", keyPrefix .. "repeat", rjk)
  return score ~= false and score ~= nil and jobId == "repeat:" .. rjk .. ":" .. score
end
