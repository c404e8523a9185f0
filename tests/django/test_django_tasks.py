"""BullQBackend for django.tasks (Django 6) / django-tasks (Django 5.2), held to the behaviour of
Django's own Immediate and Dummy backends, with a real Redis and a real worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from django_bullq.backends import BullQBackend
from django_bullq.backends.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from django_bullq.backends.results import from_bullmq_priority, to_bullmq_priority
from django_bullq.conf import get_queue
from tests.support.helpers_django import burst
from tests.testapp import dtasks

try:
    from django.tasks.exceptions import TaskResultMismatch
except ImportError:  # Django 5.2
    from django_tasks.exceptions import TaskResultMismatch  # type: ignore[no-redef]


_BACKPORT = (
    "django_tasks" if TaskResultStatus.__module__.startswith("django_tasks") else ("django.tasks")
)


@pytest.fixture
def tasks_setting(settings: Any, queue_name: str) -> Iterator[str]:
    """TASKS: BullQBackend on this test's queue, next to Django's Immediate and Dummy."""
    settings.TASKS = {
        "default": {"BACKEND": "django_bullq.backends.BullQBackend", "QUEUES": [queue_name]},
        "immediate": {
            "BACKEND": f"{_BACKPORT}.backends.immediate.ImmediateBackend",
            "QUEUES": [queue_name],
        },
        "dummy": {"BACKEND": f"{_BACKPORT}.backends.dummy.DummyBackend", "QUEUES": [queue_name]},
    }
    yield queue_name


def on(queue_name: str, task: Any, **using: Any) -> Any:
    return task.using(queue_name=queue_name, **using)


# --- the backend's declaration -------------------------------------------------------------


def test_backend_declares_every_feature(tasks_setting: str) -> None:
    backend = task_backends["default"]
    assert isinstance(backend, BullQBackend)
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority
    assert backend.check() == []


def test_check_reports_bad_queue_names_and_options(settings: Any) -> None:
    settings.TASKS = {
        "default": {
            "BACKEND": "django_bullq.backends.BullQBackend",
            "QUEUES": ["default", "a:b"],
            "OPTIONS": {"ON_COMIT": True},
        }
    }
    messages = task_backends["default"].check()
    assert [m.id for m in messages] == ["django_bullq.E011", "django_bullq.E011"]
    assert "a:b" in messages[0].msg and "ON_COMIT" in messages[1].msg


@pytest.mark.parametrize(
    ("django_priority", "bullmq_priority"), [(100, 1), (1, 100), (0, 101), (-1, 102), (-100, 201)]
)
def test_priority_mapping(django_priority: int, bullmq_priority: int) -> None:
    assert to_bullmq_priority(django_priority) == bullmq_priority
    assert from_bullmq_priority(bullmq_priority) == django_priority


def test_unprioritized_job_reads_as_default_priority() -> None:
    assert from_bullmq_priority(0) == 0
    assert from_bullmq_priority(5000) == -100


# --- enqueue: the READY result, as Django's Dummy backend returns it ------------------------


def _fields(result: Any) -> dict[str, Any]:
    return {
        "status": result.status,
        "args": result.args,
        "kwargs": result.kwargs,
        "errors": result.errors,
        "worker_ids": result.worker_ids,
        "attempts": result.attempts,
        "is_finished": result.is_finished,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "last_attempted_at": result.last_attempted_at,
        "enqueued": result.enqueued_at is not None,
    }


def test_enqueue_returns_what_the_dummy_backend_returns(tasks_setting: str) -> None:
    ours = on(tasks_setting, dtasks.echo).enqueue(1, (2, 3), key={"a": (4,)})
    dummy = on(tasks_setting, dtasks.echo, backend="dummy").enqueue(1, (2, 3), key={"a": (4,)})
    assert _fields(ours) == _fields(dummy)
    assert ours.status == TaskResultStatus.READY
    assert ours.args == [1, [2, 3]] and ours.kwargs == {"key": {"a": [4]}}
    assert ours.backend == "default" and ours.task.module_path == dtasks.echo.module_path
    assert 0 < len(ours.id) < 64
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = ours.return_value


def test_get_result_of_a_ready_task(tasks_setting: str) -> None:
    before = timezone.now()
    result = on(tasks_setting, dtasks.add).enqueue(2, b=3)
    fetched = dtasks.add.get_result(result.id)
    assert _fields(fetched) == _fields(result)
    assert fetched.id == result.id and fetched.task.queue_name == tasks_setting
    assert before - timedelta(milliseconds=1) <= fetched.enqueued_at <= timezone.now()
    assert fetched.enqueued_at == result.enqueued_at
    assert get_queue(tasks_setting).get_job_state(result.id) == "prioritized"


def test_get_result_finds_a_task_on_a_queue_no_setting_lists(
    settings: Any, queue_name: str
) -> None:
    # new-user trial: with "QUEUES": [] (any queue) a result of a task on a queue that neither
    # BULLQ["QUEUES"] nor DEFAULT_QUEUE names was never found, not even by its own refresh()
    settings.TASKS = {"default": {"BACKEND": "django_bullq.backends.BullQBackend", "QUEUES": []}}
    assert queue_name not in task_backends["default"].result_queues()
    result = on(queue_name, dtasks.add).enqueue(2, b=3)
    fetched = dtasks.add.get_result(result.id)
    assert fetched.id == result.id and fetched.task.queue_name == queue_name
    result.refresh()
    assert result.status == TaskResultStatus.READY


def test_get_result_of_an_unknown_id(tasks_setting: str) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result("nope")


def test_get_result_of_another_task_is_a_mismatch(tasks_setting: str) -> None:
    result = on(tasks_setting, dtasks.add).enqueue(1)
    with pytest.raises(TaskResultMismatch):
        dtasks.echo.get_result(result.id)


def test_plain_bullmq_job_is_not_a_task_result(tasks_setting: str) -> None:
    job = get_queue(tasks_setting).add(
        dtasks.add.module_path, {"args": [1], "kwargs": {}}, job_id="plain-job"
    )
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(job.id)


# --- validation, as Django's base backend does it ------------------------------------------


@pytest.mark.parametrize("priority", [101, -101, 1.5])
def test_priority_out_of_range_is_invalid(tasks_setting: str, priority: Any) -> None:
    with pytest.raises(InvalidTask, match="priority"):
        on(tasks_setting, dtasks.add, priority=priority)


def test_queue_not_in_queues_is_invalid(tasks_setting: str) -> None:
    with pytest.raises(InvalidTask, match="not valid for backend"):
        dtasks.add.using(queue_name="elsewhere")


def test_naive_run_after_is_invalid(tasks_setting: str) -> None:
    with pytest.raises(InvalidTask, match="aware"):
        on(tasks_setting, dtasks.add, run_after=timezone.now().replace(tzinfo=None))


def test_non_json_argument_is_refused_and_nothing_is_added(tasks_setting: str) -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        on(tasks_setting, dtasks.echo).enqueue(object())
    assert get_queue(tasks_setting).count() == 0


def test_validate_task_refuses_a_function_not_at_module_level(tasks_setting: str) -> None:
    def local() -> None: ...

    task = on(tasks_setting, dtasks.add)
    object.__setattr__(task, "func", local)  # past the decorator's own validation
    with pytest.raises(InvalidTask, match="module level"):
        task_backends["default"].validate_task(task)
    with pytest.raises(InvalidTask, match="module level"):
        task.enqueue()
    assert get_queue(tasks_setting).count() == 0


# --- running: the result Django's Immediate backend gives ----------------------------------


def test_successful_run_matches_the_immediate_backend(tasks_setting: str) -> None:
    ours = on(tasks_setting, dtasks.add).enqueue(20, b=22)
    immediate = on(tasks_setting, dtasks.add, backend="immediate").enqueue(20, b=22)
    burst(tasks_setting)
    ours.refresh()
    assert ours.status == immediate.status == TaskResultStatus.SUCCESSFUL
    assert ours.return_value == immediate.return_value == 42
    assert ours.errors == immediate.errors == []
    assert ours.attempts == immediate.attempts == 1 and len(ours.worker_ids) == 1
    assert ours.is_finished and immediate.is_finished
    assert ours.enqueued_at <= ours.started_at <= ours.finished_at
    assert ours.started_at == ours.last_attempted_at


def test_failed_run_matches_the_immediate_backend(tasks_setting: str) -> None:
    key = f"fails-{uuid.uuid4().hex}"
    ours = on(tasks_setting, dtasks.fails).enqueue(key)
    immediate = on(tasks_setting, dtasks.fails, backend="immediate").enqueue(key)
    burst(tasks_setting)
    ours.refresh()
    assert ours.status == immediate.status == TaskResultStatus.FAILED
    assert len(ours.errors) == len(immediate.errors) == 1
    error = ours.errors[0]
    assert error.exception_class_path == immediate.errors[0].exception_class_path
    assert error.exception_class is ValueError
    assert error.traceback.startswith("Traceback (most recent call last)")
    assert f"ValueError: boom {key}" in error.traceback
    assert ours.finished_at is not None and ours.attempts == 1
    with pytest.raises(ValueError, match="Task failed"):
        _ = ours.return_value


def test_return_value_django_refuses_fails_the_task(tasks_setting: str) -> None:
    ours = on(tasks_setting, dtasks.not_json).enqueue()
    immediate = on(tasks_setting, dtasks.not_json, backend="immediate").enqueue()
    burst(tasks_setting)
    ours.refresh()
    assert ours.status == immediate.status == TaskResultStatus.FAILED
    assert ours.errors[0].exception_class_path == "builtins.TypeError"


def test_async_task_runs_on_the_worker(tasks_setting: str) -> None:
    result = on(tasks_setting, dtasks.async_add).enqueue(1, 2)
    burst(tasks_setting)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3


def test_retries_keep_one_error_and_one_worker_id_per_attempt(
    tasks_setting: str, settings: Any
) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "QUEUES": {tasks_setting: {"DEFAULT_JOB_OPTIONS": {"attempts": 3}}},
    }
    key = f"fails-{uuid.uuid4().hex}"
    result = on(tasks_setting, dtasks.fails).enqueue(key)
    burst(tasks_setting)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 3 and len(result.errors) == 3
    assert all(e.exception_class is ValueError for e in result.errors)
    assert int(get_queue(tasks_setting).client.get(key)) == 3


def test_takes_context_sees_the_attempt_and_the_result_id(
    tasks_setting: str, settings: Any
) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "QUEUES": {tasks_setting: {"DEFAULT_JOB_OPTIONS": {"attempts": 2}}},
    }
    result = on(tasks_setting, dtasks.context_info).enqueue(f"ctx-{uuid.uuid4().hex}")
    burst(tasks_setting)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    seen = result.return_value
    assert seen["attempt"] == 2 and result.attempts == 2
    assert seen["id"] == seen["job_id"] == result.id
    assert seen["worker_ids"] == result.worker_ids
    assert [e.exception_class for e in result.errors] == [RuntimeError]


def test_run_after_delays_the_job(tasks_setting: str) -> None:
    run_after = timezone.now() + timedelta(hours=1)
    result = on(tasks_setting, dtasks.add, run_after=run_after).enqueue(1)
    queue = get_queue(tasks_setting)
    assert queue.get_job_state(result.id) == "delayed"
    fetched = task_backends["default"].get_result(result.id)
    assert fetched.status == TaskResultStatus.READY
    assert abs(fetched.task.run_after - run_after) < timedelta(milliseconds=1)
    burst(tasks_setting)
    assert queue.get_job_state(result.id) == "delayed"


def test_higher_priority_runs_first(tasks_setting: str) -> None:
    key = f"order-{uuid.uuid4().hex}"
    for label, priority in (("low", -100), ("default", 0), ("high", 100), ("above", 1)):
        on(tasks_setting, dtasks.record, priority=priority).enqueue(key, label)
    burst(tasks_setting)
    assert [x.decode() for x in get_queue(tasks_setting).client.lrange(key, 0, -1)] == [
        "high",
        "above",
        "default",
        "low",
    ]
    fetched = [
        task_backends["default"].get_result(job_id)
        for job_id in get_queue(tasks_setting).get_job_ids("completed")
    ]
    assert sorted(r.task.priority for r in fetched) == [-100, 0, 1, 100]


def test_signals_are_sent_with_the_backend_class(tasks_setting: str) -> None:
    seen: list[tuple[str, Any, Any]] = []

    def receiver(name: str) -> Any:
        def receive(sender: Any, task_result: Any, **kwargs: Any) -> None:
            seen.append((name, sender, task_result.status))

        return receive

    receivers = {
        signal: receiver(name)
        for signal, name in (
            (task_enqueued, "enqueued"),
            (task_started, "started"),
            (task_finished, "finished"),
        )
    }
    for signal, func in receivers.items():
        signal.connect(func)
    try:
        on(tasks_setting, dtasks.add).enqueue(1)
        burst(tasks_setting)
    finally:
        for signal, func in receivers.items():
            signal.disconnect(func)
    assert seen == [
        ("enqueued", BullQBackend, TaskResultStatus.READY),
        ("started", BullQBackend, TaskResultStatus.RUNNING),
        ("finished", BullQBackend, TaskResultStatus.SUCCESSFUL),
    ]


async def test_aenqueue_and_aget_result(tasks_setting: str) -> None:
    result = await on(tasks_setting, dtasks.add).aenqueue(4, 5)
    fetched = await dtasks.add.aget_result(result.id)
    assert fetched.status == TaskResultStatus.READY and fetched.args == [4, 5]
    await result.arefresh()
    assert result.status == TaskResultStatus.READY


def test_runworker_runs_django_tasks(tasks_setting: str) -> None:
    from django.core.management import call_command

    result = on(tasks_setting, dtasks.add).enqueue(1, b=1)
    call_command("runworker", tasks_setting, "--burst", "--verbosity", "0")
    result.refresh()
    assert result.return_value == 2


def test_job_of_an_unknown_backend_fails_readably(tasks_setting: str) -> None:
    result = on(tasks_setting, dtasks.add).enqueue(1)
    queue = get_queue(tasks_setting)
    job = queue.get_job(result.id)
    assert job is not None
    queue.client.hset(
        queue.keys.job(job.id),
        "opts",
        job.raw["opts"].replace('"backend":"default"', '"backend":"gone"'),
    )
    burst(tasks_setting)
    failed = queue.get_job(result.id)
    assert failed is not None and "backend 'gone'" in (failed.failed_reason or "")


# --- on commit -----------------------------------------------------------------------------


@pytest.fixture
def on_commit_backend(settings: Any, queue_name: str) -> str:
    settings.TASKS = {
        "default": {
            "BACKEND": "django_bullq.backends.BullQBackend",
            "QUEUES": [queue_name],
            "OPTIONS": {"ON_COMMIT": True},
        }
    }
    return queue_name


@pytest.mark.django_db(transaction=True)
def test_on_commit_enqueues_when_the_transaction_commits(on_commit_backend: str) -> None:
    with transaction.atomic():
        result = on(on_commit_backend, dtasks.add).enqueue(1)
        assert result.enqueued_at is None
        with pytest.raises(TaskResultDoesNotExist):
            dtasks.add.get_result(result.id)
    assert result.enqueued_at is not None
    assert dtasks.add.get_result(result.id).status == TaskResultStatus.READY


@pytest.mark.django_db(transaction=True)
def test_on_commit_rollback_enqueues_nothing(on_commit_backend: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        result = on(on_commit_backend, dtasks.add).enqueue(1)
        1 / 0  # noqa: B018
    assert get_queue(on_commit_backend).count() == 0
    with pytest.raises(TaskResultDoesNotExist):
        dtasks.add.get_result(result.id)


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_on_commit_follows_the_database_option(settings: Any, queue_name: str) -> None:
    settings.TASKS = {
        "default": {
            "BACKEND": "django_bullq.backends.BullQBackend",
            "QUEUES": [queue_name],
            "OPTIONS": {"ON_COMMIT": True, "DATABASE": "other"},
        }
    }
    with transaction.atomic(using="default"):
        at_once = on(queue_name, dtasks.add).enqueue(1)
        assert at_once.enqueued_at is not None
    with transaction.atomic(using="other"):
        later = on(queue_name, dtasks.add).enqueue(2)
        assert later.enqueued_at is None
    assert dtasks.add.get_result(later.id).args == [2]


@pytest.mark.django_db(transaction=True)
def test_outbox_result_id_is_known_before_the_commit(on_commit_backend: str, settings: Any) -> None:
    from django_bullq.models import OutboxJob

    settings.BULLQ = {**settings.BULLQ, "OUTBOX": {"ENABLED": True}}
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        on(on_commit_backend, dtasks.add).enqueue(5)
        1 / 0  # noqa: B018

    def crash() -> None:
        raise RuntimeError("died")  # as if the process died right after the commit

    with pytest.raises(RuntimeError, match="died"), transaction.atomic():
        transaction.on_commit(crash)
        result = on(on_commit_backend, dtasks.add).enqueue(1, b=2)
        assert OutboxJob.objects.get().job_id == result.id
    with pytest.raises(TaskResultDoesNotExist):
        dtasks.add.get_result(result.id)
    burst(on_commit_backend)  # runworker relays the row, then runs the task
    fetched = dtasks.add.get_result(result.id)
    assert fetched.status == TaskResultStatus.SUCCESSFUL and fetched.return_value == 3
    assert get_queue(on_commit_backend).get_job_counts("completed") == {"completed": 1}


def test_get_result_while_running(tasks_setting: str) -> None:
    result = on(tasks_setting, dtasks.own_status).enqueue()
    burst(tasks_setting)
    result.refresh()
    assert result.return_value == {
        "status": "RUNNING",
        "worker_ids": result.worker_ids,
        "started": True,
        "finished": False,
    }


def test_rate_limited_run_is_not_an_attempt(tasks_setting: str) -> None:
    key = f"limited-{uuid.uuid4().hex}"
    result = on(tasks_setting, dtasks.limited_once).enqueue(key)
    burst(tasks_setting)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 1 and result.attempts == 1 and result.errors == []
    assert int(get_queue(tasks_setting).client.get(key)) == 2


def test_job_whose_data_does_not_fit_fails_readably(tasks_setting: str) -> None:
    result = on(tasks_setting, dtasks.add).enqueue(1)
    queue = get_queue(tasks_setting)
    queue.client.hset(queue.keys.job(result.id), "data", '{"args": [1, 2, 3]}')
    burst(tasks_setting)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED and result.worker_ids == []
    assert result.errors[0].exception_class_path == "django_bullq.core.errors.JobFailedError"
    assert "does not match the signature" in result.errors[0].traceback
