--[[
  recordTaskRun: store the django.tasks record of a job in its hash field "djt" (ours; BullMQ
  readers ignore unknown fields). The worker running a Django task writes it when an attempt
  starts and when an attempt raises; the job is locked by that worker meanwhile, so the
  read-modify-write in Python has no competitor.

  KEYS[1] job key

  ARGV[1] record   JSON text: {"worker_ids": [str, one per attempt], "started_at": ms of the
                   first attempt, "errors": [{"exception_class_path": str, "traceback": str}]}

  Returns 0; -1 the job does not exist (removed meanwhile: nothing is written).
  Events: none.
]]
if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
redis.call("HSET", KEYS[1], "djt", ARGV[1])
return 0
