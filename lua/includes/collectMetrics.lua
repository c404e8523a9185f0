-- collectMetrics(keyPrefix, target, maxDataPoints, now)
-- Per-minute metrics of finished jobs (BullMQ's `metrics: {maxDataPoints}`, protocol §5.11), in
-- `metrics:<target>` (hash: count, prevTS, prevCount) and `metrics:<target>:data` (list, newest
-- minute at index 0, at most maxDataPoints entries). maxDataPoints nil / "" / 0: off.
-- When whole minutes passed since prevTS (minute boundaries of the ms clock), the count of the
-- closed minute (count before this job - prevCount) is pushed, then one 0 per further empty
-- minute, all capped at maxDataPoints.
local function collectMetrics(keyPrefix, target, maxDataPoints, now)
  local maxPoints = tonumber(maxDataPoints)
  if not maxPoints or maxPoints <= 0 then
    return
  end
  local metricsKey = keyPrefix .. "metrics:" .. target
  local dataKey = metricsKey .. ":data"
  local before = redis.call("HINCRBY", metricsKey, "count", 1) - 1
  local prevTS = tonumber(redis.call("HGET", metricsKey, "prevTS"))
  if not prevTS then
    redis.call("HSET", metricsKey, "prevTS", now, "prevCount", 0)
    return
  end
  local minutes = math.floor(now / 60000) - math.floor(prevTS / 60000)
  if minutes <= 0 then
    return
  end
  if minutes > maxPoints then
    minutes = maxPoints
  end
  local prevCount = tonumber(redis.call("HGET", metricsKey, "prevCount")) or 0
  redis.call("LPUSH", dataKey, before - prevCount)
  local zeros = {}
  for i = 2, minutes do
    zeros[#zeros + 1] = 0
    if #zeros == 5000 or i == minutes then
      redis.call("LPUSH", dataKey, unpack(zeros))
      zeros = {}
    end
  end
  redis.call("LTRIM", dataKey, 0, maxPoints - 1)
  redis.call("HSET", metricsKey, "prevCount", before, "prevTS", now)
end
