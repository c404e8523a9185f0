-- removeFromState(keyPrefix, jobId) -> state name
-- Takes the id out of the first state structure holding it, checked in BullMQ's order
-- (completed, waiting-children, delayed, failed, prioritized, wait, paused, active);
-- returns that state's name, or "unknown".
local function removeFromState(keyPrefix, jobId)
  for _, state in ipairs({"completed", "waiting-children", "delayed", "failed", "prioritized"}) do
    if redis.call("ZREM", keyPrefix .. state, jobId) > 0 then
      return state
    end
  end
  for _, state in ipairs({"wait", "paused", "active"}) do
    if redis.call("LREM", keyPrefix .. state, 0, jobId) > 0 then
      return state
    end
  end
  return "unknown"
end
