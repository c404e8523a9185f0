-- getParentLink(jobKey) -> parentKey, parentQueueKey, parentId, flags | nil
-- A child's link from its hash (`parentKey` and `parent`, decoded by parseParentLink); the
-- failure flags are read from `parent`. Returns nil when the job has no (readable) parent,
-- and for a job key that is not a hash (so a removal or obliterate still deletes it).
-- @include parseParentLink
local function getParentLink(jobKey)
  local link = redis.pcall("HMGET", jobKey, "parentKey", "parent")
  if link.err then
    return nil
  end
  return parseParentLink(link[1], link[2])
end
