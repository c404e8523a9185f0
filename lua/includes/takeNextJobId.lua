-- takeNextJobId(k) -> jobId | nil
--   k: the fetch keys (fetchKeys); wait, active, prioritized and pc are used.
-- Moves the next job id to active: the right end of wait (a pre-5.0 "0:" marker id found there
-- is dropped), else the lowest score of prioritized (its priority counter pc is deleted once
-- prioritized is empty). Returns nil when neither holds a job.
local function takeNextJobId(k)
  local jobId = redis.call("RPOPLPUSH", k.wait, k.active)
  if jobId and string.sub(jobId, 1, 2) == "0:" then
    redis.call("LREM", k.active, 1, jobId)
    jobId = redis.call("RPOPLPUSH", k.wait, k.active)
  end
  if jobId then
    return jobId
  end
  local popped = redis.call("ZPOPMIN", k.prioritized)
  if popped[1] then
    redis.call("LPUSH", k.active, popped[1])
    return popped[1]
  end
  redis.call("DEL", k.pc)
  return nil
end
