-- hasLockedDescendant(jobKey) -> boolean
-- True when a child, grandchild, ... of the job holds a worker's lock.
-- @include getChildKeys
local function hasLockedDescendant(jobKey)
  for _, childKey in ipairs(getChildKeys(jobKey)) do
    if redis.call("EXISTS", childKey .. ":lock") == 1 or hasLockedDescendant(childKey) then
      return true
    end
  end
  return false
end
