// Real bullmq-otel on the Node side of the telemetry interop test (tests/interop/test_otel_interop.py).
// OpenTelemetry as a Node app sets it up: a tracer provider with an in-memory exporter, the W3C
// trace-context + baggage propagator, the AsyncLocalStorage context manager.
// spec: {
//   "add": [{name, data, opts}]     add these jobs (Queue with telemetry) under a root span
//                                   named spec.root_span ("node request" by default), or
//   "work": N                       run a Worker with telemetry until N jobs are completed;
//   "then_add": {queue, name, data} the processor adds this job (Queue with telemetry) to
//                                   another queue, continuing the job's trace
//   "timeout_ms": T                 hard stop (default 15000)
// }
// prints {"ready": true} once the worker is connected (work mode), then
//   {"ids": [...], "spans": [{name, kind, traceId, spanId, parentSpanId, attributes}],
//    "timedOut": bool}
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Queue, Worker } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { emit, parseArgs, runMain, sleep } from './common.mjs';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(
  new CompositePropagator({
    propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
  }),
);

function spans() {
  return exporter.getFinishedSpans().map((span) => ({
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: (span.parentSpanContext && span.parentSpanContext.spanId) || null,
    attributes: span.attributes,
  }));
}

runMain(async () => {
  const { queueName, spec, connection } = parseArgs();
  const telemetry = new BullMQOtel({ tracerName: 'node-app' });
  const ids = [];
  let timedOut = false;
  if (spec.add) {
    const queue = new Queue(queueName, { connection, telemetry });
    const tracer = trace.getTracer('node-app');
    await tracer.startActiveSpan(spec.root_span ?? 'node request', async (root) => {
      for (const job of spec.add) {
        ids.push((await queue.add(job.name, job.data ?? {}, job.opts ?? {})).id);
      }
      root.end();
    });
    await queue.close();
  } else {
    const next = spec.then_add ? new Queue(spec.then_add.queue, { connection, telemetry }) : null;
    let done = 0;
    const worker = new Worker(
      queueName,
      async (job) => {
        ids.push(job.id);
        if (next) {
          await next.add(spec.then_add.name, spec.then_add.data ?? {});
        }
        return { by: 'node' };
      },
      { connection, telemetry, drainDelay: 1 },
    );
    worker.on('completed', () => {
      done += 1;
    });
    await worker.waitUntilReady();
    emit({ ready: true });
    const started = Date.now();
    while (done < spec.work) {
      if (Date.now() - started > (spec.timeout_ms ?? 15000)) {
        timedOut = true;
        break;
      }
      await sleep(20);
    }
    await worker.close();
    if (next) {
      await next.close();
    }
  }
  return { ids, spans: spans(), timedOut };
});
