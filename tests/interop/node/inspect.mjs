// Act on a queue and read it the way a Node dashboard does.
// spec: {
//   "do": [action, ...]   run first, in order; each result goes to "done":
//       "pause" | "resume" | "globalConcurrency:<n>" | "globalRateLimit:<max>:<ms>" |
//       "promote:<jobId>" (Job.promote) | "remove:<jobId>" (Queue.remove, 1 removed / 0 locked)
//   "max_len_events": N   construct the Queue with streams.events.maxLen = N (writes meta);
//                         otherwise the Queue skips its meta update
//   "job_ids": [id, ...], "logs": bool, "ranges": [state, ...], "workers": bool
// }
// prints: {"done": [{action, result} | {action, error}], "counts": getJobCounts(),
//          "paused": isPaused(), "jobs": {id: job or null}, "logs": {id: [lines]},
//          "ranges": {state: {"desc": [ids], "asc": [ids]}} (getJobs),
//          "workers": [raw client names] (getWorkers)}
import { Queue } from 'bullmq';
import { describeJob, parseArgs, runMain } from './common.mjs';

async function act(queue, action) {
  const [verb, ...rest] = action.split(':');
  switch (verb) {
    case 'pause':
      return queue.pause();
    case 'resume':
      return queue.resume();
    case 'globalConcurrency':
      return queue.setGlobalConcurrency(Number(rest[0]));
    case 'globalRateLimit':
      return queue.setGlobalRateLimit(Number(rest[0]), Number(rest[1]));
    case 'promote': {
      const job = await queue.getJob(rest.join(':'));
      return job.promote();
    }
    case 'remove':
      return queue.remove(rest.join(':'));
    default:
      throw new Error(`unknown action ${action}`);
  }
}

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const opts = spec.max_len_events
    ? { connection, streams: { events: { maxLen: spec.max_len_events } } }
    : { connection, skipMetasUpdate: true };
  const queue = new Queue(queueName, opts);
  try {
    await queue.waitUntilReady();
    const done = [];
    for (const action of spec.do ?? []) {
      try {
        done.push({ action, result: (await act(queue, action)) ?? null });
      } catch (err) {
        done.push({ action, error: String(err && err.message ? err.message : err) });
      }
    }
    const jobs = {};
    const logs = {};
    for (const id of spec.job_ids ?? []) {
      jobs[id] = await describeJob(await queue.getJob(id));
      if (spec.logs) {
        logs[id] = (await queue.getJobLogs(id)).logs;
      }
    }
    const ranges = {};
    for (const state of spec.ranges ?? []) {
      const ids = async (asc) => (await queue.getJobs([state], 0, -1, asc)).map((j) => j.id);
      ranges[state] = { desc: await ids(false), asc: await ids(true) };
    }
    const workers = spec.workers ? (await queue.getWorkers()).map((w) => w.rawname) : [];
    return {
      done,
      counts: await queue.getJobCounts(),
      paused: await queue.isPaused(),
      jobs,
      logs,
      ranges,
      workers,
    };
  } finally {
    await queue.close();
  }
});
