-- isJobHash(jobKey) -> boolean
-- Whether the job's key holds a hash: false when it does not exist and when it holds anything
-- else (a value written over it by hand), so a single-job operation refuses such a job as
-- missing (-1) before it writes, instead of erroring half-way with WRONGTYPE.
local function isJobHash(jobKey)
  return redis.call("TYPE", jobKey).ok == "hash"
end
