-- checkAndReleaseLock(jobKey, jobId, token, stalledKey) -> 0 | -2 | -6
-- Token "0" skips the check. On a match the lock is deleted and the id leaves `stalled`.
local function checkAndReleaseLock(jobKey, jobId, token, stalledKey)
  if token == "0" then
    return 0
  end
  local owner = redis.call("GET", jobKey .. ":lock")
  if not owner then
    return -2
  end
  if owner ~= token then
    return -6
  end
  redis.call("DEL", jobKey .. ":lock")
  redis.call("SREM", stalledKey, jobId)
  return 0
end
