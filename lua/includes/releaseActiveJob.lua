-- releaseActiveJob(jobKey, jobId, token, stalledKey, activeKey, failure) -> 0 | -2 | -3 | -6
-- Takes an active job out of `active` for its next state: checks and releases its lock
-- (checkAndReleaseLock: -2 missing, -6 another token), then records `failure` when given
-- ({failedReason, stacktrace}: HSET failedReason, stacktrace), then LREMs the id from
-- `active` (-3 when it was not there; the lock is released and the failure recorded by then).
-- The caller checks that the job exists first.
-- @include checkAndReleaseLock
local function releaseActiveJob(jobKey, jobId, token, stalledKey, activeKey, failure)
  local lockResult = checkAndReleaseLock(jobKey, jobId, token, stalledKey)
  if lockResult < 0 then
    return lockResult
  end
  if failure then
    redis.call("HSET", jobKey, "failedReason", failure[1], "stacktrace", failure[2])
  end
  if redis.call("LREM", activeKey, "-1", jobId) == 0 then
    return -3
  end
  return 0
end
