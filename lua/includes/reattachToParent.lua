-- reattachToParent(jobKey)
-- A finished child that is retried becomes a pending dependency of its parent again (BullMQ 6.x):
-- SADD to `<parentKey>:dependencies` when the parent still exists. An already released parent
-- is not moved back to waiting-children.
-- @include hashField
local function reattachToParent(jobKey)
  local parentKey = hashField(jobKey, "parentKey")
  if parentKey and redis.call("EXISTS", parentKey) == 1 then
    redis.call("SADD", parentKey .. ":dependencies", jobKey)
  end
end
