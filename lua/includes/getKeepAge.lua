-- getKeepAge(jobKey, optsField, defaultAge) -> seconds (0 = no age rule), removeNow (boolean)
-- A job's own retention age from opts[optsField] ("removeOnComplete" / "removeOnFail"):
-- {age = s} gives s; true means "do not keep"; another value (false, a count, {count}) means
-- no age rule (0); only an absent option falls back to defaultAge, as does a job key that is
-- not a hash (hashField).
-- @include hashField
local function getKeepAge(jobKey, optsField, defaultAge)
  local raw = hashField(jobKey, "opts")
  if raw then
    local ok, opts = pcall(cjson.decode, raw)
    if ok and type(opts) == "table" then
      local keep = opts[optsField]
      if keep == true then
        return 0, true
      end
      if type(keep) == "table" and tonumber(keep["age"]) then
        return tonumber(keep["age"]), false
      end
      if keep ~= nil and keep ~= cjson.null then
        return 0, false
      end
    end
  end
  return defaultAge, false
end
