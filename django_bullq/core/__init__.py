"""The BullMQ engine: keys, Lua scripts, jobs, queues and workers. Imports nothing from Django."""
