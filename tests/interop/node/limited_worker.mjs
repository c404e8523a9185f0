// A real Node Worker for the rate-limit interop tests, reporting every processor call.
// spec: {
//   "opts": {...WorkerOptions}, e.g. {"limiter": {"max": 2, "duration": 1000}, "concurrency": 2}
//   "until_finished": N   stop once completed + failed >= N
//   "timeout_ms": T       hard stop (reported as timedOut)
// }
// Processor: on the first call of a job whose data has "rate_limit_ms": M, it calls
// worker.rateLimit(M) and throws Worker.RateLimitError() (BullMQ's manual rate limit);
// otherwise it sleeps data.sleep_ms (if any) and returns {"by": "node", "i": data.i}.
// prints {"ready": true} once connected, then
//   {"calls": [{id, name, data, attemptsMade, t, limited}], "errors": [...], "timedOut": bool}
import { Queue, Worker } from 'bullmq';
import { emit, parseArgs, runMain, sleep } from './common.mjs';

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const calls = [];
  const errors = [];
  const limitedOnce = new Set();
  let worker;
  const processor = async (job) => {
    const data = job.data ?? {};
    const limited = Boolean(data.rate_limit_ms) && !limitedOnce.has(job.id);
    calls.push({ id: job.id, name: job.name, data, attemptsMade: job.attemptsMade,
      t: Date.now(), limited });
    if (limited) {
      limitedOnce.add(job.id);
      await worker.rateLimit(data.rate_limit_ms);
      throw Worker.RateLimitError();
    }
    if (data.sleep_ms) {
      await sleep(data.sleep_ms);
    }
    return { by: 'node', i: data.i ?? null };
  };
  worker = new Worker(queueName, processor, { connection, ...(spec.opts ?? {}) });
  worker.on('error', (err) => errors.push(String(err && err.message ? err.message : err)));
  const queue = new Queue(queueName, { connection, skipMetasUpdate: true });
  const started = Date.now();
  const timeoutMs = spec.timeout_ms ?? 15000;
  let timedOut = false;
  try {
    await worker.waitUntilReady();
    emit({ ready: true });
    for (;;) {
      if (spec.until_finished !== undefined) {
        const c = await queue.getJobCounts('completed', 'failed');
        if (c.completed + c.failed >= spec.until_finished) {
          break;
        }
      }
      if (Date.now() - started >= timeoutMs) {
        timedOut = true;
        break;
      }
      await sleep(25);
    }
    await worker.close();
    return { calls, errors, timedOut };
  } finally {
    await queue.close();
  }
});
