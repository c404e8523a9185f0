-- addDenseHistogram(dense, into)
-- Add a stored dense histogram [first bucket, count, count, ...] of django_bullq's metrics
-- (docs/metrics.md) to the sparse table into {bucket: count}; anything else adds nothing.
local function addDenseHistogram(dense, into)
  if type(dense) ~= "table" or #dense < 2 then
    return
  end
  local first = tonumber(dense[1]) or 0
  for i = 2, #dense do
    local n = tonumber(dense[i]) or 0
    if n ~= 0 then
      local b = first + i - 2
      into[b] = (into[b] or 0) + n
    end
  end
end
