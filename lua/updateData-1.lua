--[[
  updateData: replace a job's data (BullMQ's job.updateData).

  KEYS[1] job key

  ARGV[1] data   JSON text

  Returns 0; -1 the job does not exist.
  Events: none (as BullMQ).
]]
-- @include isJobHash
if not isJobHash(KEYS[1]) then
  return -1
end
redis.call("HSET", KEYS[1], "data", ARGV[1])
return 0
