-- failUnreadableJob(keyPrefix, jobId, eventsKey, now, keyType)
--   now: ms since epoch (ARGV text or number); keyType: what TYPE says the job key holds.
-- A job id whose key is not a hash (a string or a list written there by hand, say) cannot be
-- locked, run or failed the usual way: every HSET on it errors. Rather than let that error
-- abort the fetch or the stalled check (and strand the id), the caller takes the id out of
-- active, this puts it in the failed set, and the reason goes out as the `failed` event. The key itself is left as it is:
-- it is the operator's data, and the admin shows the job as unreadable.
-- Events: `failed` (jobId, failedReason, prev active).
local function failUnreadableJob(keyPrefix, jobId, eventsKey, now, keyType)
  redis.call("ZADD", keyPrefix .. "failed", now, jobId)
  redis.call("XADD", eventsKey, "*", "event", "failed", "jobId", jobId, "failedReason",
    "job key " .. keyPrefix .. jobId .. " holds a " .. keyType .. ", not a job hash",
    "prev", "active")
end
