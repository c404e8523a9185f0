"""System checks: every id fires on the setting it guards, and a valid setup is silent."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks
from django.test import override_settings

from django_bullq import checks as bullq_checks
from django_bullq.producer.registry import registry
from django_bullq.producer.task import Task

URL = "redis://127.0.0.1:6379/0"


def run_checks() -> list[checks.CheckMessage]:
    return checks.run_checks(tags=[bullq_checks.TAG])


def ids(bullq: Any) -> list[str]:
    with override_settings(BULLQ=bullq):
        return sorted(m.id or "" for m in run_checks())


def test_checks_are_registered() -> None:
    registered = checks.registry.registry.get_checks()
    for check in bullq_checks.ALL_CHECKS:
        assert check in registered


@pytest.fixture
def immediate_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every SQLite database of the test settings in transaction_mode IMMEDIATE (W002 quiet)."""
    from django.conf import settings

    for entry in settings.DATABASES.values():
        options = {**entry.get("OPTIONS", {}), "transaction_mode": "IMMEDIATE"}
        monkeypatch.setitem(entry, "OPTIONS", options)


@pytest.mark.usefixtures("immediate_sqlite")
def test_valid_settings_are_silent() -> None:
    assert (
        ids(
            {
                "CONNECTIONS": {
                    "default": URL,
                    "other": {"URL": "rediss://h:6380/1", "OPTIONS": {}},
                },
                "DEFAULT_QUEUE": "mails",
                "PREFIX": "bull",
                "QUEUES": {
                    "mails": {"CONNECTION": "other", "DEFAULT_JOB_OPTIONS": {"attempts": 3}}
                },
                "WORKER": {"CONCURRENCY": 2, "GRACE_PERIOD": 1.5},
                "OUTBOX": {
                    "ENABLED": True,
                    "DATABASES": ["default", "other"],
                    "POLL_INTERVAL": 0.5,
                    "BATCH_SIZE": 10,
                },
            }
        )
        == []
    )


def test_every_message_has_a_hint() -> None:
    with override_settings(
        BULLQ={
            "CONNECTIONS": {"default": "http://x"},
            "NOPE": 1,
            "QUEUES": {"a:b": {"CONNECTION": "zz"}},
        }
    ):
        messages = run_checks()
    assert messages
    assert all(m.hint for m in messages)


@pytest.mark.parametrize(
    ("bullq", "expected"),
    [
        ("redis://localhost", "django_bullq.E001"),
        ({"CONNECTIONS": {"default": URL}, "PREFX": "x"}, "django_bullq.E002"),
        ({"WORKER": {"CONCURENCY": 2}}, "django_bullq.E002"),
        ({"QUEUES": {"q": {"CONECTION": "default"}}}, "django_bullq.E002"),
        ({"CONNECTIONS": {"default": {"URL": URL, "OPTS": {}}}}, "django_bullq.E002"),
        ({"QUEUES": []}, "django_bullq.E003"),
        ({"PREFIX": ""}, "django_bullq.E003"),
        ({"MAX_PAYLOAD_BYTES": -1}, "django_bullq.E003"),
        ({"MAX_PAYLOAD_BYTES": "16MB"}, "django_bullq.E003"),
        ({"WORKER": {"CONCURRENCY": 0}}, "django_bullq.E003"),
        ({"WORKER": {"GRACE_PERIOD": "30"}}, "django_bullq.E003"),
        ({"WORKER": {"EVENT_LOOP": "trio"}}, "django_bullq.E003"),
        ({"WORKER": {"EVENT_LOOP": 1}}, "django_bullq.E003"),
        ({"CONNECTIONS": {"default": {"OPTIONS": {}}}}, "django_bullq.E003"),
        ({"QUEUES": {"q": "default"}}, "django_bullq.E003"),
        ({"CONNECTIONS": {"default": "http://localhost:6379"}}, "django_bullq.E004"),
        # new-user trial: accepted, then enqueue raised "Port could not be cast to integer"
        ({"CONNECTIONS": {"default": "redis://127.0.0.1:notaport/0"}}, "django_bullq.E004"),
        ({"CONNECTIONS": {"default": "redis://127.0.0.1:6379/zero"}}, "django_bullq.E004"),
        # Sentinel trial: accepted, then the first enqueue raised
        ({"CONNECTIONS": {"default": "redis+sentinel://127.0.0.1:26379"}}, "django_bullq.E004"),
        ({"CONNECTIONS": {"default": "redis+sentinel://h:x/mymaster"}}, "django_bullq.E004"),
        (
            {"CONNECTIONS": {"default": "redis+sentinel://h:26379/mymaster/zero"}},
            "django_bullq.E004",
        ),
        ({"QUEUES": {"q": {"CONNECTION": "missing"}}}, "django_bullq.E005"),
        ({"QUEUES": {"a:b": {}}}, "django_bullq.E006"),
        ({"DEFAULT_QUEUE": "x{y}"}, "django_bullq.E006"),
        ({"CONNECTIONS": {"other": URL}}, "django_bullq.E007"),
        ({"QUEUES": {"q": {"DEFAULT_JOB_OPTIONS": {"attemps": 2}}}}, "django_bullq.E008"),
        ({"QUEUES": {"q": {"DEFAULT_JOB_OPTIONS": {"priority": -5}}}}, "django_bullq.E008"),
        (
            {"CONNECTIONS": {"default": "redis+cluster://h:7000"}, "QUEUES": {"q": {}}},
            "django_bullq.E009",
        ),
        ({"CONNECTIONS": {"default": "redis+cluster://h:7000"}}, "django_bullq.E009"),
        ({"QUEUES": {"q": {"DEFAULT_JOB_OPTIONS": {"delay": "soon"}}}}, "django_bullq.E008"),
        (
            {"QUEUES": {"q": {"DEFAULT_JOB_OPTIONS": {"backoff": {"type": "fixed"}}}}},
            "django_bullq.E008",
        ),
        ({"OUTBOX": {"ENABLE": True}}, "django_bullq.E002"),
        ({"OUTBOX": True}, "django_bullq.E003"),
        ({"OUTBOX": {"ENABLED": "yes"}}, "django_bullq.E003"),
        ({"OUTBOX": {"DATABASES": ["nowhere"]}}, "django_bullq.E003"),
        ({"OUTBOX": {"POLL_INTERVAL": 0}}, "django_bullq.E003"),
        ({"OUTBOX": {"BATCH_SIZE": 0}}, "django_bullq.E003"),
    ],
)
def test_each_error_id(bullq: Any, expected: str) -> None:
    assert expected in ids(bullq)


def test_cluster_with_hash_tag_prefix_is_fine() -> None:
    assert (
        ids(
            {
                "CONNECTIONS": {"default": "redis+cluster://h:7000"},
                "PREFIX": "{bull}",
                "QUEUES": {"q": {}},
            }
        )
        == []
    )


def test_task_with_invalid_queue_is_reported() -> None:
    def f() -> None:
        pass

    bad = Task(f, name="tests.bad-queue-task", queue="a:b")
    registry.register(bad)
    try:
        messages = run_checks()
    finally:
        registry.unregister(bad.name)
    assert [m.id for m in messages] == ["django_bullq.E006"]
    assert messages[0].obj is bad


def test_runworker_owned_by_us_is_silent() -> None:
    assert bullq_checks.check_runworker_command() == []


def test_w001_when_channels_is_listed_first() -> None:
    from django.conf import settings

    apps = [a for a in settings.INSTALLED_APPS if a != "channels"]
    with override_settings(INSTALLED_APPS=["channels", *apps]):
        messages = bullq_checks.check_runworker_command()
    assert [m.id for m in messages] == ["django_bullq.W001"]
    assert "'channels'" in messages[0].msg
    assert "above 'channels'" in (messages[0].hint or "")


def test_w001_hint_names_the_bullq_runworker_alias() -> None:
    from django.conf import settings

    apps = [a for a in settings.INSTALLED_APPS if a != "channels"]
    with override_settings(INSTALLED_APPS=["channels", *apps]):
        (message,) = bullq_checks.check_runworker_command()
    assert "manage.py bullq runworker" in (message.hint or "")


def test_w002_concurrency_over_deferred_sqlite() -> None:
    """CONCURRENCY > 1 with a SQLite database that begins DEFERRED: 'database is locked'."""
    assert ids({"CONNECTIONS": {"default": URL}, "WORKER": {"CONCURRENCY": 2}}) == [
        "django_bullq.W002"
    ]
    with override_settings(BULLQ={"CONNECTIONS": {"default": URL}, "WORKER": {"CONCURRENCY": 4}}):
        (message,) = bullq_checks.check_sqlite_concurrency()
    assert "4 jobs at once" in message.msg and "'default', 'other'" in message.msg
    assert "database is locked" in message.msg
    assert "'transaction_mode': 'IMMEDIATE'" in (message.hint or "")


def test_w002_is_silent_at_concurrency_1_and_with_immediate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ids({"CONNECTIONS": {"default": URL}}) == []
    assert ids({"CONNECTIONS": {"default": URL}, "WORKER": {"CONCURRENCY": 1}}) == []
    immediate = {
        "ENGINE": "django.db.backends.sqlite3",
        "OPTIONS": {"transaction_mode": "IMMEDIATE"},
    }
    assert bullq_checks.sqlite_deferred_aliases({"a": immediate}) == []
    postgres = {"ENGINE": "django.db.backends.postgresql"}
    assert bullq_checks.sqlite_deferred_aliases({"a": postgres}) == []
    deferred = {"ENGINE": "django.db.backends.sqlite3", "OPTIONS": {"timeout": 20}}
    assert bullq_checks.sqlite_deferred_aliases({"b": deferred, "a": immediate}) == ["b"]


def test_foreign_runworker_is_refused_with_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """channels above django_bullq: `manage.py runworker` stops with a message saying what
    to do, before Channels' command prints its usage text."""
    from django.conf import settings

    apps = [a for a in settings.INSTALLED_APPS if a != "channels"]
    monkeypatch.delenv(bullq_checks.FOREIGN_RUNWORKER_ENV, raising=False)
    with override_settings(INSTALLED_APPS=["channels", *apps]):
        bullq_checks.refuse_foreign_runworker(["manage.py", "migrate"])  # other commands run
        with pytest.raises(SystemExit) as caught:
            bullq_checks.refuse_foreign_runworker(["manage.py", "runworker", "default"])
        monkeypatch.setenv(bullq_checks.FOREIGN_RUNWORKER_ENV, "1")
        bullq_checks.refuse_foreign_runworker(["manage.py", "runworker"])  # on purpose
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert "List 'django_bullq' above 'channels' in INSTALLED_APPS" in err
    assert "manage.py bullq runworker" in err
    bullq_checks.refuse_foreign_runworker(["manage.py", "runworker"])  # ours: nothing to say


def test_every_id_is_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "checks.md").read_text()
    for n in range(1, 13):
        assert f"django_bullq.E{n:03d}" in text
    assert "django_bullq.W001" in text
    assert "django_bullq.W002" in text


SENTINEL_URL = "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster"


@pytest.mark.parametrize("url", [URL, SENTINEL_URL])
@pytest.mark.parametrize(
    ("options", "named"),
    [({"bogus": 1}, "bogus"), ({"max_connections": "ten"}, "ValueError")],
)
def test_options_the_client_does_not_take_are_an_error_not_a_crash_at_start(
    url: str, options: dict[str, Any], named: str
) -> None:
    """Trial findings: ``OPTIONS={"bogus": 1}`` (and ``{"max_connections": "ten"}``) passed
    ``check``, then ``runworker`` crashed with a bare TypeError (ValueError) at the first
    connection. Sentinel URLs were not tried at all."""
    with override_settings(BULLQ={"CONNECTIONS": {"default": {"URL": url, "OPTIONS": options}}}):
        messages = [m for m in run_checks() if m.id == "django_bullq.E003"]
    assert len(messages) == 1
    assert "BULLQ['CONNECTIONS']['default']['OPTIONS']" in messages[0].msg
    assert named in messages[0].msg
    ok_options = {"socket_timeout": 5, "health_check_interval": 10, "password": "pw", "db": 1}
    if url == SENTINEL_URL:
        ok_options["sentinel_kwargs"] = {"password": "sentinel-pw"}
    assert ids({"CONNECTIONS": {"default": {"URL": url, "OPTIONS": ok_options}}}) == []


@pytest.mark.parametrize(
    ("url", "options"),
    [
        (URL, {"socket_timeout": "5"}),
        (URL, {"socket_connect_timeout": "abc"}),
        (URL, {"health_check_interval": True}),
        ("redis+sentinel://127.0.0.1:26379/mymaster", {"socket_timeout": "5"}),
    ],
)
def test_seconds_options_that_are_not_numbers_are_an_error(url: str, options: Any) -> None:
    """``OPTIONS={"socket_timeout": "5"}`` (a value read from the environment) passed
    ``check``: redis-py takes it, and only a socket or the pipeline's watchdog would refuse it.
    Cluster and Sentinel URLs, whose clients are not built here, get the check too."""
    with override_settings(BULLQ={"CONNECTIONS": {"default": {"URL": url, "OPTIONS": options}}}):
        messages = [m for m in run_checks() if m.id == "django_bullq.E003"]
    name = next(iter(options))
    assert [m.msg for m in messages] == [
        f"BULLQ['CONNECTIONS']['default']['OPTIONS'][{name!r}] is {options[name]!r}, "
        "not a number of seconds."
    ]
    fine = {"URL": url, "OPTIONS": {name: 2.5}}
    assert [m for m in ids({"CONNECTIONS": {"default": fine}}) if m == "django_bullq.E003"] == []


@pytest.mark.parametrize(
    ("options", "verdict"),
    [
        ({"socket_timeout": 0}, "error"),
        ({"socket_connect_timeout": -1}, "error"),
        ({"health_check_interval": -5}, "error"),
        ({"health_check_interval": 0}, "ok"),  # redis-py's default: no health check
        ({"socket_timeout": None}, "ok"),  # wait forever
    ],
)
def test_a_timeout_of_zero_or_below_is_an_error(options: dict[str, Any], verdict: str) -> None:
    """``socket_timeout=0`` made every call fail at once on the sync client, and meant "no
    timeout" on the asyncio pipeline (the trial of the pipeline's watchdog): refused here."""
    with override_settings(BULLQ={"CONNECTIONS": {"default": {"URL": URL, "OPTIONS": options}}}):
        messages = [m for m in run_checks() if m.id == "django_bullq.E003"]
    assert (messages == []) is (verdict == "ok"), [m.msg for m in messages]
    if verdict == "error":
        assert "above 0" in messages[0].msg or "above 0" in (messages[0].hint or "")


@pytest.mark.parametrize("port", ["99999", "0", "-1", "abc"])
def test_a_port_out_of_range_says_so(port: str) -> None:
    """Trial findings: ``redis://h:99999`` was reported as a port that "is not a number", and
    ``redis://h:0`` passed, then redis-py took 0 as "no port" and went to 6379."""
    url = f"redis://127.0.0.1:{port}/0"
    with override_settings(BULLQ={"CONNECTIONS": {"default": url}}):
        messages = [m for m in run_checks() if m.id == "django_bullq.E004"]
    assert [m.msg for m in messages] == [
        "BULLQ['CONNECTIONS']['default'] has a URL whose port is not a number from 1 to 65535."
    ]
