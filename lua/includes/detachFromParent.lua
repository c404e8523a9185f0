-- detachFromParent(jobKey)
-- A job being deleted leaves its parent's :dependencies; when it was the last pending one the
-- parent is released from waiting-children (protocol §5.10).
-- @include getParentLink
-- @include releaseParent
-- @include hashField
local function detachFromParent(jobKey)
  local parentKey, pq, parentId = getParentLink(jobKey)
  if not parentKey then
    parentKey = hashField(jobKey, "parentKey")
    if not parentKey then
      return
    end
    pq, parentId = string.match(parentKey, "^(.*):([^:]+)$")
  end
  local deps = parentKey .. ":dependencies"
  if redis.call("SREM", deps, jobKey) == 1 and redis.call("SCARD", deps) == 0 and pq then
    releaseParent(pq, parentKey, parentId, nil)
  end
end
