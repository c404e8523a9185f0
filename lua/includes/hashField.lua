-- hashField(key, field) -> the field's value, or nil
-- HGET that reads a key which is not a hash (a value written there by hand) as a hash without
-- the field, so removing such a job (remove, clean, drain, obliterate, retention) still deletes
-- its keys instead of the whole script erroring with WRONGTYPE.
local function hashField(key, field)
  local value = redis.pcall("HGET", key, field)
  if type(value) == "string" then
    return value
  end
  return nil
end
