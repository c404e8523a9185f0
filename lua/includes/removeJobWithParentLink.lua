-- removeJobWithParentLink(keyPrefix, jobId, finished)
-- "Hard" removal used by clean and drain: deletes the job's keys, dedup key and lock, takes it
-- out of its parent's `:dependencies`, and deletes a parent of the same queue that waits in
-- `waiting-children` and has no pending dependency left. State structures are the caller's.
-- finished: the job completed / failed before (clean of those sets), so its dedup key keeps
-- its TTL (removeJob).
-- @include removeJob
-- @include hashField
local function removeJobWithParentLink(keyPrefix, jobId, finished)
  local jobKey = keyPrefix .. jobId
  local parentKey = hashField(jobKey, "parentKey")
  removeJob(keyPrefix, jobId, finished)
  if not parentKey then
    return
  end
  redis.call("SREM", parentKey .. ":dependencies", jobKey)
  if string.sub(parentKey, 1, #keyPrefix) == keyPrefix
      and redis.call("SCARD", parentKey .. ":dependencies") == 0 then
    local parentId = string.sub(parentKey, #keyPrefix + 1)
    if redis.call("ZREM", keyPrefix .. "waiting-children", parentId) == 1 then
      removeJob(keyPrefix, parentId)
    end
  end
end
