-- releaseParent(parentQueueKey, parentKey, parentId, now) -> boolean
-- If the parent exists and sits in its queue's waiting-children, take it out and release it
-- (moveParentToWait). A parent in any other state is left alone.
-- @include moveParentToWait
local function releaseParent(parentQueueKey, parentKey, parentId, now)
  if redis.call("EXISTS", parentKey) == 1 and
      redis.call("ZREM", parentQueueKey .. ":waiting-children", parentId) == 1 then
    moveParentToWait(parentQueueKey, parentKey, parentId, now)
    return true
  end
  return false
end
