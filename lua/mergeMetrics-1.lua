--[[
  mergeMetrics: add one worker's counts to one bucket of django_bullq's job metrics (ours, not
  BullMQ's: docs/metrics.md). Run by the worker's metrics flush, every few seconds; never on
  a job's own path.

  KEYS[1] bucket   "<prefix>:<queue>:bullq:metrics:m:<minute>" (or ":h:<hour>"): a JSON
                   string {"<job name>": [completed, failed, retried, run, wait]}, where run
                   and wait are dense histograms [first bucket, count, count, ...] ([] or {}
                   when empty)

  ARGV[1] delta     JSON text of the same shape: the counts to add
  ARGV[2] expireAtS epoch s at which the bucket expires (set again at every merge)

  Returns the number of job names the bucket holds after the merge. A bucket that is not
  valid JSON (written by something else) is replaced by the delta.
  Events: none.
]]
-- @include mergeMetricEntry
local stored = {}
local current = redis.call("GET", KEYS[1])
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == "table" then
    stored = decoded
  end
end
local names = 0
for name, add in pairs(cjson.decode(ARGV[1])) do
  local old = stored[name]
  if type(old) ~= "table" then
    old = {}
  end
  stored[name] = mergeMetricEntry(old, add, {1, 2, 3})
end
for _ in pairs(stored) do
  names = names + 1
end
redis.call("SET", KEYS[1], cjson.encode(stored))
redis.call("EXPIREAT", KEYS[1], ARGV[2])
return names
