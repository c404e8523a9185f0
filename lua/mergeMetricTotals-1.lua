--[[
  mergeMetricTotals: add one worker's counts to the all-time totals of django_bullq's job
  metrics (ours, not BullMQ's: docs/metrics.md), what Prometheus counters and histograms are
  read from (docs/observability.md). Run by the worker's metrics flush beside mergeMetrics;
  never on a job's own path. The totals only grow (no expiry; Queue.obliterate removes them).

  KEYS[1] totals  "<prefix>:<queue>:bullq:metrics:total": a hash; field "n:<job name>" is
                  the JSON [completed, failed, retried, run, wait, runSumMs, waitSumMs, rank]
                  of that name (run and wait dense histograms [first bucket, count, ...], [] or
                  {} when empty; the sums in ms; rank 1, 2, ... the order names were first kept
                  in, absent for ARGV[4]'s), "q:stalled" the jobs the stalled check moved back to
                  wait, "q:names" how many job names are kept (ARGV[4]'s aside)

  ARGV[1] delta     JSON {"<job name>": [completed, failed, retried, run, wait, runSumMs,
                    waitSumMs]}: the counts to add
  ARGV[2] stalled   stalled jobs to add to "q:stalled" (integer, >= 0)
  ARGV[3] maxNames  distinct job names the hash keeps; the counts of a name not yet kept
                    once there are this many go to ARGV[4]'s field
  ARGV[4] other     the name the counts past ARGV[3] are added under

  Returns the number of job names kept after the merge (ARGV[4]'s aside). A field that is
  not valid JSON (written by something else) is replaced by the delta.
  Events: none.
]]
-- @include mergeMetricEntry
local key = KEYS[1]
local maxNames = tonumber(ARGV[3]) or 0
local names = tonumber(redis.call("HGET", key, "q:names")) or 0

-- the field the counts of name go to, and the rank of a name kept now (nil otherwise)
local function fieldOf(name)
  local field = "n:" .. name
  if name == ARGV[4] or redis.call("HEXISTS", key, field) == 1 then
    return field, nil
  end
  if names >= maxNames then
    return "n:" .. ARGV[4], nil
  end
  names = names + 1
  redis.call("HSET", key, "q:names", names)
  return field, names
end

for name, add in pairs(cjson.decode(ARGV[1])) do
  local field, rank = fieldOf(name)
  local old = {}
  local current = redis.call("HGET", key, field)
  if current then
    local ok, decoded = pcall(cjson.decode, current)
    if ok and type(decoded) == "table" then
      old = decoded
    end
  end
  local merged = mergeMetricEntry(old, add, {1, 2, 3, 6, 7})
  merged[8] = tonumber(old[8]) or rank
  redis.call("HSET", key, field, cjson.encode(merged))
end
local stalled = tonumber(ARGV[2]) or 0
if stalled > 0 then
  redis.call("HINCRBY", key, "q:stalled", stalled)
end
return names
