-- toDenseHistogram(sparse)
-- The sparse histogram {bucket: count} as stored: {first bucket, count, ...}, {} when empty.
local function toDenseHistogram(sparse)
  local low, high
  for b in pairs(sparse) do
    if low == nil or b < low then low = b end
    if high == nil or b > high then high = b end
  end
  if low == nil then
    return {}
  end
  local out = {low}
  for b = low, high do
    out[#out + 1] = sparse[b] or 0
  end
  return out
end
