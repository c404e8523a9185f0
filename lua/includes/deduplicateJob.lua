-- deduplicateJob(keyPrefix, jobId, optsText, name, data, parentKey, parent, eventsKey,
--                delayedKey, maxEvents, timestamp, delay) -> owner job id | nil
-- Deduplication of an add (protocol §5.14), from opts.de = {id, ttl (ms), extend, replace,
-- keepLastIfActive, reschedule}; timestamp (ms) and delay (ms) are the incoming add's. nil: the job is to be created (its hash already holds `deid`, and
-- `de:<id>` points at it); an id: the add is absorbed by that existing job.
--   * free key (or a stale one: no TTL and its job hash is gone): take it;
--   * replace, owner still delayed: the owner is deleted (`removed prev delayed`), the new job
--     takes the key (remaining TTL kept unless extend) -> `deduplicated jobId <new> ...`;
--   * keepLastIfActive, owner active: the new job's payload is parked in `dn:<id>` (the last
--     one wins), the key loses its TTL -> `deduplicated`; it is created when the owner ends;
--   * replace, owner not delayed: absorbed without an event;
--   * otherwise absorbed -> `deduplicated jobId <owner> deduplicationId <id>
--     deduplicatedJobId <new>`; extend first renews the TTL; reschedule (BullMQ 6.7) then moves
--     a still delayed owner to timestamp + delay (`delayed` event, marker "1").
-- @include setDeduplicationKey
-- @include removeJobKeys
-- @include getDelayedScore
-- @include addDelayMarker
local function deduplicateJob(keyPrefix, jobId, optsText, name, data, parentKey, parent, eventsKey,
                              delayedKey, maxEvents, timestamp, delay)
  if not string.find(optsText, '"de":', 1, true) then
    return nil
  end
  local opts = cjson.decode(optsText)
  local de = opts["de"]
  if type(de) ~= "table" or de["id"] == nil or de["id"] == cjson.null then
    return nil
  end
  local dedupId = tostring(de["id"])
  local deKey = keyPrefix .. "de:" .. dedupId
  local nextKey = keyPrefix .. "dn:" .. dedupId
  local ttl = tonumber(de["ttl"]) or 0
  local keepLast = de["keepLastIfActive"] == true
  local owner = redis.call("GET", deKey)
  if owner and redis.call("PTTL", deKey) == -1 and redis.call("EXISTS", keyPrefix .. owner) == 0 then
    -- stale: a key without TTL must never outlive its job (case B19)
    redis.call("DEL", deKey, nextKey)
    owner = nil
  end
  if not owner then
    setDeduplicationKey(deKey, jobId, ttl, keepLast)
    redis.call("HSET", keyPrefix .. jobId, "deid", dedupId)
    return nil
  end
  if de["replace"] == true and redis.call("ZREM", delayedKey, owner) == 1 then
    removeJobKeys(keyPrefix .. owner)
    redis.call("DEL", nextKey)
    redis.call("XADD", eventsKey, "*", "event", "removed", "jobId", owner, "prev", "delayed")
    redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "deduplicated",
      "jobId", jobId, "deduplicationId", dedupId, "deduplicatedJobId", owner)
    if ttl > 0 and not keepLast and de["extend"] ~= true then
      redis.call("SET", deKey, jobId, "KEEPTTL")
    else
      setDeduplicationKey(deKey, jobId, ttl, keepLast)
    end
    redis.call("HSET", keyPrefix .. jobId, "deid", dedupId)
    return nil
  end
  if keepLast and redis.call("LPOS", keyPrefix .. "active", owner) then
    local fields = {"name", name, "data", data, "opts", optsText, "jid", jobId}
    if parentKey ~= "" then
      for _, v in ipairs({"pk", parentKey, "pd", parent, "pdk", parentKey .. ":dependencies"}) do
        table.insert(fields, v)
      end
    end
    redis.call("DEL", nextKey)
    redis.call("HSET", nextKey, unpack(fields))
    redis.call("PERSIST", deKey)
  elseif de["replace"] == true then
    return owner
  elseif ttl > 0 and de["extend"] == true then
    setDeduplicationKey(deKey, owner, ttl, keepLast)
  end
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "deduplicated",
    "jobId", owner, "deduplicationId", dedupId, "deduplicatedJobId", jobId)
  if de["reschedule"] == true and redis.call("ZSCORE", delayedKey, owner) then
    local due = timestamp + delay
    redis.call("HSET", keyPrefix .. owner, "delay", delay)
    redis.call("ZADD", delayedKey, getDelayedScore(delayedKey, due), owner)
    redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", owner,
      "delay", due)
    addDelayMarker(keyPrefix .. "marker", delayedKey)
  end
  return owner
end
