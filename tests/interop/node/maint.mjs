// Run BullMQ maintenance operations with the real Node Queue / Job and report the results.
// spec: {"do": [action, ...]} run in order; each result goes to "done":
//   "clean:<graceMs>:<limit>:<state>"  Queue.clean → removed ids
//   "obliterate[:force[:count]]"       Queue.obliterate({force, count})
//   "retryJobs:<state>:<count>"         Queue.retryJobs({state, count})
//   "promoteJobs"                        Queue.promoteJobs()
//   "drain[:delayed]"                    Queue.drain(delayed)
//   "metrics:<completed|failed>"        Queue.getMetrics(type)
//   "retry:<jobId>:<state>"             Job.retry(state)
//   "priority:<jobId>:<p>"              Job.changePriority({priority: p})
//   "delay:<jobId>:<ms>"                Job.changeDelay(ms)
//   "data:<jobId>:<json>"               Job.updateData(JSON.parse(json))
//   "work:<n>:<maxDataPoints>"           a Worker with metrics {maxDataPoints} until n more
//                                        jobs finished (completed + failed)
// prints: {"done": [{action, result} | {action, error}], "counts": getJobCounts()}
import { Queue, Worker } from 'bullmq';
import { parseArgs, runMain, sleep } from './common.mjs';

async function work(queue, queueName, connection, n, maxDataPoints) {
  const before = await queue.getJobCounts('completed', 'failed');
  const target = before.completed + before.failed + n;
  const worker = new Worker(queueName, async (job) => {
    if (job.data && job.data.fail) {
      throw new Error('fail');
    }
    return 'ok';
  }, { connection, metrics: { maxDataPoints }, drainDelay: 1 });
  const started = Date.now();
  for (;;) {
    const c = await queue.getJobCounts('completed', 'failed');
    if (c.completed + c.failed >= target || Date.now() - started > 10000) {
      break;
    }
    await sleep(20);
  }
  await worker.close();
  return n;
}

async function act(queue, queueName, connection, action) {
  const [verb, ...rest] = action.split(':');
  switch (verb) {
    case 'clean':
      return queue.clean(Number(rest[0]), Number(rest[1]), rest[2]);
    case 'obliterate':
      return queue.obliterate({ force: rest[0] === 'force', count: rest[1] ? Number(rest[1]) : undefined });
    case 'retryJobs':
      return queue.retryJobs({ state: rest[0], count: Number(rest[1]) });
    case 'promoteJobs':
      return queue.promoteJobs();
    case 'drain':
      return queue.drain(rest[0] === 'delayed');
    case 'metrics':
      return queue.getMetrics(rest[0]);
    case 'retry':
      return (await queue.getJob(rest[0])).retry(rest[1]);
    case 'priority':
      return (await queue.getJob(rest[0])).changePriority({ priority: Number(rest[1]) });
    case 'delay':
      return (await queue.getJob(rest[0])).changeDelay(Number(rest[1]));
    case 'data':
      return (await queue.getJob(rest[0])).updateData(JSON.parse(rest.slice(1).join(':')));
    case 'work':
      return work(queue, queueName, connection, Number(rest[0]), Number(rest[1]));
    default:
      throw new Error(`unknown action ${action}`);
  }
}

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const queue = new Queue(queueName, { connection, skipMetasUpdate: true });
  try {
    await queue.waitUntilReady();
    const done = [];
    for (const action of spec.do ?? []) {
      try {
        done.push({ action, result: (await act(queue, queueName, connection, action)) ?? null });
      } catch (err) {
        done.push({ action, error: String(err && err.message ? err.message : err) });
      }
    }
    return { done, counts: await queue.getJobCounts() };
  } finally {
    await queue.close();
  }
});
