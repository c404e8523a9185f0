-- updateParentOnFinish(jobKey, parentKeyField, parentJson, target, value, now, removing)
-- Parent bookkeeping when a child finishes for good (protocol §5.3 step 9, §5.15):
--   completed: child leaves the parent's :dependencies, its returnvalue goes to :processed; the
--     parent is released when no dependency remains.
--   failed, by the child's `parent` flags:
--     fpof: child → parent's :unsuccessful; a parent in waiting-children or delayed gets `defa`
--       "child <key> failed" and is released (the worker fails it, and so on up the tree); a
--       parent elsewhere (active, waiting) just gets `defa` unless it already failed.
--     cpof: child → parent's :failed, parent released at once.
--     idof: child → parent's :failed, parent released when no dependency remains.
--     rdof: child dropped from :dependencies, parent released when no dependency remains.
--     none: nothing; the child stays a pending dependency (BullMQ's default: the parent waits).
--   parentKeyField / parentJson: the child's `parentKey` and `parent` fields, read by the caller
--     (false when absent); see parseParentLink.
--   removing (the child is deleted by its retention rule): a child still listed in
--   :dependencies is dropped, and the parent released if it was the last one.
--   A parent key that is not a hash: the child is dropped from :dependencies, and a parent in
--   waiting-children goes to failed (failUnreadableJob; its `failed` event on its queue).
-- @include parseParentLink
-- @include releaseParent
-- @include moveParentToWait
-- @include failUnreadableJob
local function updateParentOnFinish(jobKey, parentKeyField, parentJson, target, value, now, removing)
  local parentKey, pq, parentId, flags = parseParentLink(parentKeyField, parentJson)
  if not parentKey then
    return
  end
  local deps = parentKey .. ":dependencies"
  local parentType = redis.call("TYPE", parentKey).ok
  if parentType ~= "hash" and parentType ~= "none" then
    -- the parent's key was written over by hand: the child leaves its dependencies, and a
    -- parent waiting for its children goes to failed (it could never be run)
    redis.call("SREM", deps, jobKey)
    if pq and redis.call("ZREM", pq .. ":waiting-children", parentId) == 1 then
      failUnreadableJob(pq .. ":", parentId, pq .. ":events", now, parentType)
    end
    return
  end
  if target == "completed" then
    if redis.call("SREM", deps, jobKey) == 1 then
      redis.call("HSET", parentKey .. ":processed", jobKey, value)
      if redis.call("SCARD", deps) == 0 then
        releaseParent(pq, parentKey, parentId, now)
      end
    end
  elseif flags["fpof"] then
    if redis.call("SREM", deps, jobKey) == 1 then
      redis.call("ZADD", parentKey .. ":unsuccessful", now, jobKey)
      if redis.call("EXISTS", parentKey) == 1 then
        local reason = "child " .. jobKey .. " failed"
        local from = nil
        if redis.call("ZSCORE", pq .. ":waiting-children", parentId) then
          from = pq .. ":waiting-children"
        elseif redis.call("ZSCORE", pq .. ":delayed", parentId) then
          from = pq .. ":delayed"
          redis.call("HSET", parentKey, "delay", 0)
        end
        if from then
          redis.call("ZREM", from, parentId)
          redis.call("HSET", parentKey, "defa", reason)
          moveParentToWait(pq, parentKey, parentId, now)
        elseif not redis.call("ZSCORE", pq .. ":failed", parentId) then
          redis.call("HSET", parentKey, "defa", reason)
        end
      end
    end
  elseif flags["cpof"] then
    if redis.call("SREM", deps, jobKey) == 1 then
      redis.call("HSET", parentKey .. ":failed", jobKey, value)
      releaseParent(pq, parentKey, parentId, now)
    end
  elseif flags["idof"] or flags["rdof"] then
    if redis.call("SREM", deps, jobKey) == 1 then
      if flags["idof"] then
        redis.call("HSET", parentKey .. ":failed", jobKey, value)
      end
      if redis.call("SCARD", deps) == 0 then
        releaseParent(pq, parentKey, parentId, now)
      end
    end
  end
  if removing and redis.call("SREM", deps, jobKey) == 1 and redis.call("SCARD", deps) == 0 then
    releaseParent(pq, parentKey, parentId, now)
  end
end
