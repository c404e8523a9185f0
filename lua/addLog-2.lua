--[[
  addLog: append one line to a job's log (BullMQ's addLog).

  KEYS[1] job key   KEYS[2] job logs list (<job key>:logs)

  ARGV[1] jobId
  ARGV[2] line       text
  ARGV[3] keepLogs   keep only the newest N lines (0 = keep all)

  Returns the number of log lines kept; -1 the job does not exist.
  Events: none.
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
local count = redis.call("RPUSH", KEYS[2], ARGV[2])
local keep = tonumber(ARGV[3]) or 0
if keep > 0 then
  redis.call("LTRIM", KEYS[2], -keep, -1)
  return math.min(keep, count)
end
return count
