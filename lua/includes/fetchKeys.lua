-- fetchKeys() -> table
-- Names KEYS[1..11], the queue keys every script that can fetch a job receives first, in this order:
-- wait, active, prioritized, events, stalled, limiter, delayed, paused, meta, pc, marker.
local function fetchKeys()
  return {wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
    stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8], meta = KEYS[9],
    pc = KEYS[10], marker = KEYS[11]}
end
