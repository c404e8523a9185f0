// Listen with a real Node QueueEvents and report what it received.
// spec: {"last_event_id": "0" (read the stream from its start; default "0"),
//        "final_ids": [jobId, ...]  stop once each has a completed/failed event and a drained
//                                   event arrived after the last of them,
//        "timeout_ms": T}
// Prints {"ready": true} on its own line once listening, then the report:
//   {"events": [{"event": name, "args": {...}, "id": streamId}], "timedOut": bool}
import { QueueEvents } from 'bullmq';
import { emit, parseArgs, runMain, sleep } from './common.mjs';

const NAMES = ['added', 'waiting', 'active', 'progress', 'completed', 'failed', 'delayed',
  'drained', 'stalled', 'paused', 'resumed', 'retries-exhausted', 'removed', 'duplicated',
  'cleaned', 'waiting-children', 'deduplicated'];

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const events = [];
  const finalIds = new Set(spec.final_ids ?? []);
  const finished = new Set();
  let drainedAfterAll = false;
  const qe = new QueueEvents(queueName, {
    connection,
    lastEventId: spec.last_event_id ?? '0',
    blockingTimeout: 200,
  });
  for (const name of NAMES) {
    qe.on(name, (args, id) => {
      if (name === 'drained') {
        // QueueEvents emits drained with the stream id only
        events.push({ event: name, args: {}, id: args });
        if (finished.size === finalIds.size && finalIds.size > 0) {
          drainedAfterAll = true;
        }
        return;
      }
      events.push({ event: name, args, id });
      if ((name === 'completed' || name === 'failed') && finalIds.has(args.jobId)) {
        finished.add(args.jobId);
      }
    });
  }
  qe.on('error', (err) => process.stderr.write(`queue events error: ${err}\n`));
  await qe.waitUntilReady();
  emit({ ready: true });
  const started = Date.now();
  const timeoutMs = spec.timeout_ms ?? 15000;
  let timedOut = false;
  while (!drainedAfterAll) {
    if (Date.now() - started > timeoutMs) {
      timedOut = true;
      break;
    }
    await sleep(25);
  }
  await qe.close();
  return { events, timedOut };
});
