-- getParentLink(jobKey) -> parentKey, parentQueueKey, parentId, flags | nil
-- A child's link from its hash: `parentKey` (full key) and the `parent` JSON
-- {"id", "queueKey", "fpof"?, "cpof"?, "idof"?, "rdof"?}; the failure flags are read from there.
-- Returns nil when the job has no (readable) parent.
local function getParentLink(jobKey)
  local link = redis.call("HMGET", jobKey, "parentKey", "parent")
  if not link[2] then
    return nil
  end
  local ok, parent = pcall(cjson.decode, link[2])
  if not ok or type(parent) ~= "table" or parent["id"] == nil or not parent["queueKey"] then
    return nil
  end
  local parentId = tostring(parent["id"])
  local parentKey = link[1] or (parent["queueKey"] .. ":" .. parentId)
  return parentKey, parent["queueKey"], parentId, parent
end
