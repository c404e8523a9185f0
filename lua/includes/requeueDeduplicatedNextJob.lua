-- requeueDeduplicatedNextJob(k, keyPrefix, dedupId, now, maxEvents)
--   k: fetchKeys() table; dedupId: the finished job's `deid` (nil: nothing to do)
-- keepLastIfActive (protocol §5.14): when the owner of a deduplication id ends, the payload
-- parked in `dn:<id>` while it was active becomes a job (id `jid`, else the counter), owning
-- `de:<id>`; `dn:<id>` is deleted. Enqueued like an add: delayed / prioritized / wait.
-- Events: added (jobId, name); waiting (jobId) or delayed (jobId, delay = due ms).
-- @include setDeduplicationKey
-- @include getDelayedScore
-- @include addDelayMarker
-- @include addJobWithPriority
-- @include isQueuePausedOrMaxed
-- @include addBaseMarkerIfNeeded
local function requeueDeduplicatedNextJob(k, keyPrefix, dedupId, now, maxEvents)
  if not dedupId then
    return
  end
  local nextKey = keyPrefix .. "dn:" .. dedupId
  local parked = redis.call("HMGET", nextKey, "name", "data", "opts", "jid", "pk", "pd", "pdk")
  if not parked[1] then
    return
  end
  redis.call("DEL", nextKey)
  local counter = redis.call("INCR", keyPrefix .. "id")
  local newId = parked[4] or tostring(counter)
  local newKey = keyPrefix .. newId
  if redis.call("EXISTS", newKey) == 1 then
    return
  end
  local ok, opts = pcall(cjson.decode, parked[3] or "{}")
  if not ok or type(opts) ~= "table" then
    opts = {}
  end
  local de = type(opts["de"]) == "table" and opts["de"] or {}
  setDeduplicationKey(keyPrefix .. "de:" .. dedupId, newId, tonumber(de["ttl"]) or 0,
    de["keepLastIfActive"] == true)
  local delay = tonumber(opts["delay"]) or 0
  local priority = tonumber(opts["priority"]) or 0
  local fields = {"name", parked[1], "data", parked[2] or "{}", "opts", parked[3] or "{}",
    "timestamp", now, "delay", delay, "priority", priority, "deid", dedupId}
  if parked[5] then
    for _, v in ipairs({"parentKey", parked[5], "parent", parked[6] or ""}) do
      table.insert(fields, v)
    end
  end
  redis.call("HSET", newKey, unpack(fields))
  redis.call("XADD", k.events, "*", "event", "added", "jobId", newId, "name", parked[1])
  if delay > 0 then
    local due = now + delay
    redis.call("ZADD", k.delayed, getDelayedScore(k.delayed, due), newId)
    redis.call("XADD", k.events, "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", newId,
      "delay", due)
    addDelayMarker(k.marker, k.delayed)
  else
    if priority > 0 then
      addJobWithPriority(k.prioritized, k.pc, priority, newId)
    elseif opts["lifo"] == true then
      redis.call("RPUSH", k.wait, newId)
    else
      redis.call("LPUSH", k.wait, newId)
    end
    redis.call("XADD", k.events, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", newId)
    addBaseMarkerIfNeeded(k.marker, isQueuePausedOrMaxed(k.meta, k.active))
  end
  if parked[7] then
    redis.call("SADD", parked[7], newKey)
  end
end
