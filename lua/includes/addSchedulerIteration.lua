-- addSchedulerIteration(k, keyPrefix, schedulerId, millis, count, now, maxEvents) -> jobId, delay
-- Creates iteration job "repeat:<schedulerId>:<millis>" from the scheduler hash (template name,
-- data, opts; repeat settings), INCRs the id counter and routes it like addJob: delayed when
-- millis > now, else prioritized / wait. k = {wait, paused, meta, id, delayed, prioritized, pc,
-- events, marker, active} (keys). Events: added; delayed or waiting.
-- @include enqueueNewJob
local function addSchedulerIteration(k, keyPrefix, schedulerId, millis, count, now, maxEvents)
  local s = redis.call("HMGET", keyPrefix .. "repeat:" .. schedulerId, "name", "data", "opts",
    "every", "pattern", "tz", "limit", "startDate", "endDate", "offset")
  local jobId = "repeat:" .. schedulerId .. ":" .. millis
  local opts = {}
  if s[3] and s[3] ~= "" then
    opts = cjson.decode(s[3])
  end
  local rep = {count = count}
  if s[4] then rep["every"] = tonumber(s[4]) end
  if s[5] then rep["pattern"] = s[5] end
  if s[6] then rep["tz"] = s[6] end
  if s[7] then rep["limit"] = tonumber(s[7]) end
  if s[8] then rep["startDate"] = tonumber(s[8]) end
  if s[9] then rep["endDate"] = tonumber(s[9]) end
  if s[10] then rep["offset"] = tonumber(s[10]) end
  local delay = millis - now
  if delay < 0 then
    delay = 0
  end
  opts["repeat"] = rep
  opts["jobId"] = jobId
  opts["delay"] = delay
  opts["timestamp"] = now
  opts["prevMillis"] = millis
  opts["repeatJobKey"] = schedulerId
  local priority = tonumber(opts["priority"]) or 0
  local name = s[1] or ""
  redis.call("INCR", k[4])
  redis.call("HSET", keyPrefix .. jobId, "name", name, "data", s[2] or "{}",
    "opts", cjson.encode(opts), "timestamp", now, "delay", delay, "priority", priority,
    "rjk", schedulerId)
  redis.call("XADD", k[8], "*", "event", "added", "jobId", jobId, "name", name)
  enqueueNewJob(k, jobId, delay > 0 and millis or 0, priority, opts["lifo"] == true, maxEvents)
  return jobId, delay
end
