-- removeDescendants(jobKey)
-- Deletes every child, grandchild, ... of the job (in any queue of the prefix), each taken out
-- of its state and announced on its own queue's stream: `removed jobId <id> prev <state>`.
-- @include getChildKeys
-- @include removeFromState
-- @include removeJob
local function removeDescendants(jobKey)
  for _, childKey in ipairs(getChildKeys(jobKey)) do
    local childPrefix, childId = string.match(childKey, "^(.*:)([^:]+)$")
    if childPrefix and redis.call("EXISTS", childKey) == 1 then
      removeDescendants(childKey)
      local prev = removeFromState(childPrefix, childId)
      removeJob(childPrefix, childId)
      redis.call("XADD", childPrefix .. "events", "*", "event", "removed", "jobId", childId,
        "prev", prev)
    end
  end
end
