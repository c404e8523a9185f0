"""The names OpenTelemetry sees: BullMQ's (``bullmq.*``, as Node ``bullmq`` 6 with
``bullmq-otel`` writes them, ``enums/telemetry-attributes.ts``) and the messaging semantic
conventions' (``messaging.*``). No OpenTelemetry import: constants only."""

from __future__ import annotations

from typing import Final

#: Instrumentation scope name of our tracer and meter.
SCOPE: Final = "django_bullq"
#: ``messaging.system``: the protocol on the wire is BullMQ's, so dashboards group our spans
#: with Node's.
SYSTEM: Final = "bullmq"

# --- BullMQ's attributes (TelemetryAttributes) ---------------------------------------------
QUEUE_NAME: Final = "bullmq.queue.name"
QUEUE_OPERATION: Final = "bullmq.queue.operation"
BULK_COUNT: Final = "bullmq.job.bulk.count"
BULK_NAMES: Final = "bullmq.job.bulk.names"
JOB_NAME: Final = "bullmq.job.name"
JOB_ID: Final = "bullmq.job.id"
JOB_KEY: Final = "bullmq.job.key"
JOB_ATTEMPTS_MADE: Final = "bullmq.job.attempts.made"
JOB_FAILED_REASON: Final = "bullmq.job.failed.reason"
JOB_FINISHED_TIMESTAMP: Final = "bullmq.job.attempt_finished_timestamp"
JOB_PROCESSED_TIMESTAMP: Final = "bullmq.job.processed.timestamp"
JOB_STATE: Final = "bullmq.job.state"
DEDUPLICATION_KEY: Final = "bullmq.job.deduplication.key"
FLOW_NAME: Final = "bullmq.flow.name"
WORKER_ID: Final = "bullmq.worker.id"
WORKER_NAME: Final = "bullmq.worker.name"
QUEUE_JOBS_STATE: Final = "bullmq.queue.jobs.state"

# --- the messaging semantic conventions ----------------------------------------------------
MESSAGING_SYSTEM: Final = "messaging.system"
MESSAGING_OPERATION_NAME: Final = "messaging.operation.name"
MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
MESSAGING_DESTINATION: Final = "messaging.destination.name"
MESSAGING_MESSAGE_ID: Final = "messaging.message.id"
MESSAGING_BATCH_COUNT: Final = "messaging.batch.message_count"
MESSAGING_CONSUMER_GROUP: Final = "messaging.consumer.group.name"
ERROR_TYPE: Final = "error.type"

# --- BullMQ's metrics (MetricNames) and the semantic conventions' ----------------------------
JOBS_COMPLETED: Final = "bullmq.jobs.completed"
JOBS_FAILED: Final = "bullmq.jobs.failed"
JOBS_DELAYED: Final = "bullmq.jobs.delayed"
JOBS_RETRIED: Final = "bullmq.jobs.retried"
JOBS_WAITING: Final = "bullmq.jobs.waiting"
JOBS_WAITING_CHILDREN: Final = "bullmq.jobs.waiting_children"
JOB_DURATION: Final = "bullmq.job.duration"
QUEUE_JOBS: Final = "bullmq.queue.jobs"
PROCESS_DURATION: Final = "messaging.process.duration"

#: Job option keys of the trace carrier (Node ``Job.optsFromJSON``): ``tm`` holds the W3C
#: propagation carrier as a JSON string (``{"traceparent": ..., "tracestate": ...,
#: "baggage": ...}``), ``omc`` (omit context) true keeps a job from carrying one.
CARRIER_KEY: Final = "tm"
OMIT_CONTEXT_KEY: Final = "omc"
