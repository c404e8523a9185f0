// Add jobs with the real Node Queue.add, one after the other (order matters for FIFO/LIFO).
// spec: {"jobs": [{"name": str, "data": any, "opts": {...BullMQ JobsOptions}}]}
// prints: {"ids": [jobId, ...]}
import { Queue } from 'bullmq';
import { parseArgs, runMain } from './common.mjs';

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const queue = new Queue(queueName, { connection });
  try {
    const ids = [];
    for (const job of spec.jobs ?? []) {
      const added = await queue.add(job.name, job.data, job.opts ?? {});
      ids.push(added.id);
    }
    return { ids };
  } finally {
    await queue.close();
  }
});
