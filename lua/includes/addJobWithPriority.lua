-- addJobWithPriority(prioritizedKey, pcKey, priority, jobId)
-- Score = priority * 2^32 + (INCR pc mod 2^32): lower runs first, FIFO within one priority.
local function addJobWithPriority(prioritizedKey, pcKey, priority, jobId)
  local counter = redis.call("INCR", pcKey)
  local score = tonumber(priority) * 4294967296 + (counter % 4294967296)
  redis.call("ZADD", prioritizedKey, score, jobId)
end
