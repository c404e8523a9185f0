-- parseParentLink(parentKeyField, parentJson) -> parentKey, parentQueueKey, parentId, flags | nil
-- Decodes a child's link as its hash stores it: the `parentKey` field (full key, may be absent)
-- and the `parent` JSON {"id", "queueKey", "fpof"?, "cpof"?, "idof"?, "rdof"?}, read by the
-- caller (false when absent, as HMGET gives). Returns nil when there is no (readable) parent.
local function parseParentLink(parentKeyField, parentJson)
  if not parentJson then
    return nil
  end
  local ok, parent = pcall(cjson.decode, parentJson)
  if not ok or type(parent) ~= "table" or parent["id"] == nil or not parent["queueKey"] then
    return nil
  end
  local parentId = tostring(parent["id"])
  local parentKey = parentKeyField or (parent["queueKey"] .. ":" .. parentId)
  return parentKey, parent["queueKey"], parentId, parent
end
