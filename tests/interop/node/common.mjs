// Shared helpers of the interop scripts. Every script is called as
//   node <script>.mjs <redisUrl> <queueName> '<json spec>'
// (cwd = tests/interop, so `bullmq` resolves from tests/interop/node_modules) and prints exactly
// one JSON document on stdout when it is done. Diagnostics go to stderr.

export function parseArgs() {
  const [url, queueName, specText] = process.argv.slice(2);
  if (!url || !queueName) {
    throw new Error('usage: node <script>.mjs <redisUrl> <queueName> [json spec]');
  }
  const spec = specText ? JSON.parse(specText) : {};
  return { url, queueName, spec, connection: connectionFrom(url) };
}

/** ioredis options from a redis:// URL (BullMQ's Worker wants maxRetriesPerRequest null). */
export function connectionFrom(url) {
  const u = new URL(url);
  const db = Number((u.pathname || '/0').slice(1) || 0);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    db,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    maxRetriesPerRequest: null,
  };
}

export function emit(value) {
  process.stdout.write(JSON.stringify(value) + '\n');
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Plain-JSON view of a Node Job (what a Node dashboard would show). */
export async function describeJob(job) {
  if (!job) {
    return null;
  }
  return {
    id: job.id,
    name: job.name,
    data: job.data,
    opts: job.opts,
    progress: job.progress,
    delay: job.delay,
    priority: job.priority,
    timestamp: job.timestamp,
    processedOn: job.processedOn ?? null,
    finishedOn: job.finishedOn ?? null,
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    stalledCounter: job.stalledCounter,
    failedReason: job.failedReason ?? null,
    stacktrace: job.stacktrace,
    returnvalue: job.returnvalue ?? null,
    processedBy: job.processedBy ?? null,
    state: await job.getState(),
  };
}

/** Run `main` and exit 0 after printing its JSON; any error exits 1 with the message on stderr. */
export function runMain(main) {
  main()
    .then((result) => {
      // exit once the report is flushed: stdout is a pipe, written asynchronously, and
      // exiting at once cuts reports over the pipe's 64 KiB
      process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
    })
    .catch((err) => {
      process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
      process.exit(1);
    });
}
