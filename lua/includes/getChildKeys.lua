-- getChildKeys(jobKey) -> list of full child job keys
-- Every child a parent knows: pending (:dependencies), completed (:processed), failed and
-- ignored (:failed), failed with failParentOnFailure (:unsuccessful).
local function getChildKeys(jobKey)
  local keys = redis.call("SMEMBERS", jobKey .. ":dependencies")
  for _, k in ipairs(redis.call("HKEYS", jobKey .. ":processed")) do
    table.insert(keys, k)
  end
  for _, k in ipairs(redis.call("HKEYS", jobKey .. ":failed")) do
    table.insert(keys, k)
  end
  for _, k in ipairs(redis.call("ZRANGE", jobKey .. ":unsuccessful", 0, -1)) do
    table.insert(keys, k)
  end
  return keys
end
