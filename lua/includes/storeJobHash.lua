-- storeJobHash(jobKey, jobId, name, data, opts, timestamp, delay, priority, parentKey, parent,
--              eventsKey) -> timestamp, delay, priority (numbers)
-- Writes a new job's hash (name, data, opts, timestamp, delay, priority; parentKey and parent
-- when parentKey is not "") and emits `added` (jobId, name). The arguments are the ARGV texts
-- of an add: `timestamp` (ms) is stored as sent, `delay` (ms) and `priority` as numbers (junk
-- counts as 0); the three numbers are returned for the enqueueing that follows.
local function storeJobHash(jobKey, jobId, name, data, opts, timestamp, delay, priority,
    parentKey, parent, eventsKey)
  local delayMs = tonumber(delay) or 0
  local priorityNumber = tonumber(priority) or 0
  local fields = {"name", name, "data", data, "opts", opts, "timestamp", timestamp,
    "delay", delayMs, "priority", priorityNumber}
  if parentKey ~= "" then
    table.insert(fields, "parentKey")
    table.insert(fields, parentKey)
    table.insert(fields, "parent")
    table.insert(fields, parent)
  end
  redis.call("HSET", jobKey, unpack(fields))
  redis.call("XADD", eventsKey, "*", "event", "added", "jobId", jobId, "name", name)
  return tonumber(timestamp), delayMs, priorityNumber
end
