// Job schedulers the way a Node producer / dashboard uses them.
// spec: {
//   "upsert": [{"id", "repeat": {every | pattern, tz, limit, ...}, "template": {name, data, opts}}],
//   "remove": [id, ...]        Queue.removeJobScheduler
//   "get": [id, ...]           Queue.getJobScheduler
// }
// prints {"upserted": {id: {"jobId", "delay"}}, "removed": {id: result},
//         "get": {id: scheduler or null}, "list": getJobSchedulers(0, -1, true),
//         "count": getJobSchedulersCount()}
import { Queue } from 'bullmq';
import { parseArgs, runMain } from './common.mjs';

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const queue = new Queue(queueName, { connection });
  try {
    const upserted = {};
    for (const u of spec.upsert ?? []) {
      const job = await queue.upsertJobScheduler(u.id, u.repeat, u.template ?? {});
      upserted[u.id] = job ? { jobId: job.id, delay: job.delay } : null;
    }
    const removed = {};
    for (const id of spec.remove ?? []) {
      removed[id] = await queue.removeJobScheduler(id);
    }
    const get = {};
    for (const id of spec.get ?? []) {
      get[id] = (await queue.getJobScheduler(id)) ?? null;
    }
    const list = await queue.getJobSchedulers(0, -1, true);
    const count = await queue.getJobSchedulersCount();
    return { upserted, removed, get, list, count };
  } finally {
    await queue.close();
  }
});
