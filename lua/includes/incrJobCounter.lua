-- incrJobCounter(jobKey, field) -> the new count
-- HINCRBY jobKey field 1 for the job's own counters (ats, atm, stc), tolerant of a hash written
-- by hand or by a foreign producer: a field holding anything but an integer counts as 0, so
-- the job keeps moving (and fails later with a readable reason) instead of every fetch of the
-- queue erroring on it.
local function incrJobCounter(jobKey, field)
  local count = redis.pcall("HINCRBY", jobKey, field, 1)
  if type(count) == "table" then
    redis.call("HSET", jobKey, field, 1)
    return 1
  end
  return count
end
