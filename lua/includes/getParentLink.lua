-- getParentLink(jobKey) -> parentKey, parentQueueKey, parentId, flags | nil
-- A child's link from its hash (`parentKey` and `parent`, decoded by parseParentLink); the
-- failure flags are read from `parent`. Returns nil when the job has no (readable) parent.
-- @include parseParentLink
local function getParentLink(jobKey)
  local link = redis.call("HMGET", jobKey, "parentKey", "parent")
  return parseParentLink(link[1], link[2])
end
