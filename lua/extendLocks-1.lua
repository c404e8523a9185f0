--[[
  extendLocks: renew the locks of a worker's active jobs in one call (BullMQ's extendLocks).

  KEYS[1] stalled

  ARGV[1] keyPrefix     "<prefix>:<queue>:"
  ARGV[2] lockDuration  ms
  ARGV[3..] pairs       jobId, token, jobId, token, ...

  Returns the list of job ids whose lock was missing or owned by another token (lock lost);
  an empty list when every lock was renewed. Renewed ids leave `stalled`.
  Events: none.
]]
local keyPrefix, lockDuration = ARGV[1], ARGV[2]
local lost = {}
for i = 3, #ARGV, 2 do
  local jobId, token = ARGV[i], ARGV[i + 1]
  local lockKey = keyPrefix .. jobId .. ":lock"
  if redis.call("GET", lockKey) == token then
    redis.call("SET", lockKey, token, "PX", lockDuration)
    redis.call("SREM", KEYS[1], jobId)
  else
    table.insert(lost, jobId)
  end
end
return lost
