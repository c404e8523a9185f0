-- mergeMetricEntry(old, add, counts)
-- One job name's metrics entry of django_bullq (docs/metrics.md) with another added: the
-- numbers at the indexes of counts summed, the run and wait dense histograms (indexes 4 and 5)
-- merged. Either entry may lack fields (they count 0); returns a new table.
-- @include addDenseHistogram
-- @include toDenseHistogram
local function mergeMetricEntry(old, add, counts)
  local merged = {}
  for _, i in ipairs(counts) do
    merged[i] = (tonumber(old[i]) or 0) + (tonumber(add[i]) or 0)
  end
  for i = 4, 5 do
    local sparse = {}
    addDenseHistogram(old[i], sparse)
    addDenseHistogram(add[i], sparse)
    merged[i] = toDenseHistogram(sparse)
  end
  return merged
end
