// Node bullmq adapter of `make bench`: the same protocol as benchmarks/adapters/common.py.
//   node benchmarks/node/bench.mjs '<json spec>'
// prints {"ready": true}, waits for a line on stdin, runs, prints one JSON result line.
// bullmq resolves from tests/interop/node_modules (the pinned 6.7.0 of the interop tests).
import { createRequire } from 'node:module';
import net from 'node:net';
import readline from 'node:readline';

const require = createRequire(new URL('../../tests/interop/package.json', import.meta.url));
const { Queue, Worker } = require('bullmq');

const spec = JSON.parse(process.argv[2]);

// Round trips: every write to a TCP socket (a pipeline or a MULTI is one write).
let sends = 0;
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function countedWrite(...args) {
  if (this.remotePort) sends += 1;
  return write.apply(this, args);
};

function connection(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
           maxRetriesPerRequest: null };
}

function emit(value) {
  process.stdout.write(JSON.stringify(value) + '\n');
}

let base = 0;
async function readyAndWait() {
  emit({ ready: true });
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once('line', resolve));
  rl.close();
  base = sends;
}

// A run that did jobs always writes; none seen means the counter missed the client: null, not 0.
function finish(jobs, seconds) {
  const roundTrips = sends - base > 0 ? sends - base : null;
  const line = { jobs, seconds, round_trips: roundTrips, event_loop: 'node' };
  process.stdout.write(JSON.stringify(line) + '\n',
                       () => process.exit(0));
}

function cpuWork(iterations) {
  let total = 0;
  for (let i = 0; i < iterations; i += 1) total += Math.sin(i) * Math.cos(i);
  return total;
}

function body() {
  if (spec.work === 'cpu') return async () => cpuWork(spec.cpu_iterations);
  if (spec.work === 'io') return () => new Promise((r) => setTimeout(r, spec.io_ms));
  return async () => null;
}

async function bulk(queue) {
  const start = performance.now();
  for (let from = 0; from < spec.jobs; from += spec.chunk) {
    const jobs = [];
    for (let i = from; i < Math.min(from + spec.chunk, spec.jobs); i += 1) {
      jobs.push({ name: 'bench', data: { i } });
    }
    await queue.addBulk(jobs);
  }
  return (performance.now() - start) / 1000;
}

async function singles(queue) {
  await readyAndWait();
  const start = performance.now();
  const produce = async (p) => {
    for (let i = p; i < spec.jobs; i += spec.producers) await queue.add('bench', { i });
  };
  await Promise.all(Array.from({ length: spec.producers }, (_, p) => produce(p)));
  finish(spec.jobs, (performance.now() - start) / 1000);
}

async function work(queue) {
  await bulk(queue);
  const run = body();
  let count = 0;
  let first = null;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    finish(count, (performance.now() - (first ?? performance.now())) / 1000);
  };
  await readyAndWait();
  const opts = { connection: connection(spec.url), concurrency: spec.concurrency };
  if (spec.remove_completed) opts.removeOnComplete = { count: 0 };
  // eslint-disable-next-line no-new
  new Worker(spec.queue, async () => {
    if (first === null) {
      first = performance.now();
      // the cap runs from the first job's start, as in the Python adapters
      if (spec.max_seconds > 0) setTimeout(end, spec.max_seconds * 1000);
    }
    await run();
    count += 1;
    if (count === spec.jobs) end();
  }, opts);
}

const queue = new Queue(spec.queue, { connection: connection(spec.url) });
if (spec.kind === 'bulk_insert') {
  await readyAndWait();
  finish(spec.jobs, await bulk(queue));
} else if (spec.kind === 'single_insert') {
  await singles(queue);
} else if (spec.kind === 'process') {
  await work(queue);
} else {
  emit({ na: `no ${spec.kind} run for Node bullmq` });
  process.exit(0);
}
