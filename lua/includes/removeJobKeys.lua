-- removeJobKeys(jobKey)
-- Deletes a job's hash and every per-job key of the layout (the lock is handled by callers).
local function removeJobKeys(jobKey)
  return redis.call("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end
