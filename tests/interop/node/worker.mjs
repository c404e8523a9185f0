// Run a real Node Worker on the queue and report every processor call.
// spec: {
//   "opts": {concurrency, lockDuration, stalledInterval, drainDelay, name, ...WorkerOptions},
//   "until_finished": N   stop once completed + failed >= N (polled with getJobCounts), or
//   "until_calls": N      stop once the processor ran N times and nothing is left to run
//                         (for jobs that removeOnComplete/removeOnFail take out of the counts),
//   "run_ms": M           stop after M ms whatever happened,
//   "timeout_ms": T       hard stop (reported as timedOut)
//   "hang": true          the processor never returns (the test kills this process)
// }
// The processor's behaviour comes from the job data (the same contract as the Python tests):
//   sleep_ms: wait that long; progress: updateProgress(value) first;
//   fail_times: throw Error("fail <attemptsMade>") while attemptsMade < fail_times;
//   result: return this value (default {"by": "node", "i": data.i, "attempt": attemptsMade}).
// prints {"ready": true} once connected, then at the end
//   {"calls": [{id, name, data, attemptsMade, t}], "stalled": [ids], "errors": [text],
//          "timedOut": bool, "counts": {...}}
import { Queue, Worker } from 'bullmq';
import { emit, parseArgs, runMain, sleep } from './common.mjs';

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const calls = [];
  const stalled = [];
  const errors = [];
  const processor = async (job) => {
    const data = job.data ?? {};
    calls.push({ id: job.id, name: job.name, data, attemptsMade: job.attemptsMade, t: Date.now() });
    if (spec.hang) {
      await new Promise(() => {});
    }
    if (data.progress !== undefined) {
      await job.updateProgress(data.progress);
    }
    if (data.sleep_ms) {
      await sleep(data.sleep_ms);
    }
    if (data.fail_times && job.attemptsMade < data.fail_times) {
      throw new Error(`fail ${job.attemptsMade}`);
    }
    if (Object.prototype.hasOwnProperty.call(data, 'result')) {
      return data.result;
    }
    return { by: 'node', i: data.i ?? null, attempt: job.attemptsMade };
  };
  const worker = new Worker(queueName, processor, { connection, ...(spec.opts ?? {}) });
  worker.on('stalled', (jobId) => stalled.push(jobId));
  worker.on('error', (err) => errors.push(String(err && err.message ? err.message : err)));
  const queue = new Queue(queueName, { connection });
  const started = Date.now();
  const timeoutMs = spec.timeout_ms ?? 15000;
  let timedOut = false;
  try {
    await worker.waitUntilReady();
    emit({ ready: true });
    for (;;) {
      const elapsed = Date.now() - started;
      if (spec.run_ms !== undefined && elapsed >= spec.run_ms) {
        break;
      }
      if (spec.until_finished !== undefined) {
        const c = await queue.getJobCounts('completed', 'failed');
        if (c.completed + c.failed >= spec.until_finished) {
          break;
        }
      }
      if (spec.until_calls !== undefined && calls.length >= spec.until_calls) {
        const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        if (c.waiting + c.active + c.delayed + c.prioritized === 0) {
          break;
        }
      }
      if (elapsed >= timeoutMs) {
        timedOut = true;
        break;
      }
      await sleep(50);
    }
    await worker.close();
    const counts = await queue.getJobCounts();
    return { calls, stalled, errors, timedOut, counts };
  } finally {
    await queue.close();
  }
});
