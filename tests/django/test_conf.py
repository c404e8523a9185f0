"""The BULLQ settings object: defaults, merge, caches cleared on setting_changed."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_bullq import conf
from django_bullq.core.options import JobOptions
from django_bullq.core.queue import Queue


def test_defaults_fill_missing_keys(redis_url: str) -> None:
    with override_settings(BULLQ={"CONNECTIONS": {"default": redis_url}}):
        cfg = conf.get_config()
        assert cfg["PREFIX"] == "bull"
        assert cfg["DEFAULT_QUEUE"] == "default"
        assert cfg["QUEUES"] == {}
        assert cfg["WORKER"] == conf.DEFAULTS["WORKER"]
        assert cfg["CONNECTIONS"] == {"default": {"URL": redis_url, "OPTIONS": {}}}
        assert conf.bullq_settings.PREFIX == "bull"


def test_unset_bullq_uses_defaults() -> None:
    with override_settings():
        from django.conf import settings

        del settings.BULLQ
        assert conf.get_config()["CONNECTIONS"]["default"]["URL"] == "redis://127.0.0.1:6379/0"


def test_worker_dict_merges_key_by_key() -> None:
    with override_settings(BULLQ={"WORKER": {"CONCURRENCY": 4, "GRACE_PERIOD": 2.5}}):
        opts = conf.worker_options()
        assert opts.concurrency == 4
        assert opts.grace_period_s == 2.5
        assert opts.lock_duration == 30_000
        assert conf.worker_options(concurrency=9, name=None).concurrency == 9


def test_worker_unknown_key_raises() -> None:
    with (
        override_settings(BULLQ={"WORKER": {"CONCURENCY": 4}}),
        pytest.raises(conf.ConfigurationError, match="CONCURENCY"),
    ):
        conf.worker_options()


def test_setting_changed_clears_the_caches(redis_url: str) -> None:
    with override_settings(BULLQ={"CONNECTIONS": {"default": redis_url}, "PREFIX": "one"}):
        first = conf.get_queue("q1")
        assert conf.get_queue("q1") is first
        assert first.prefix == "one"
    with override_settings(BULLQ={"CONNECTIONS": {"default": redis_url}, "PREFIX": "two"}):
        second = conf.get_queue("q1")
        assert second is not first
        assert second.prefix == "two"
        assert conf.bullq_settings.PREFIX == "two"


def test_get_queue_applies_queue_entry(redis_url: str) -> None:
    bullq = {
        "CONNECTIONS": {
            "default": redis_url,
            "other": {"URL": redis_url, "OPTIONS": {"socket_timeout": 5}},
        },
        "DEFAULT_QUEUE": "mails",
        "QUEUES": {
            "mails": {
                "CONNECTION": "other",
                "PREFIX": "custom",
                "DEFAULT_JOB_OPTIONS": {"attempts": 4, "backoff": 500},
            }
        },
    }
    with override_settings(BULLQ=bullq):
        queue = conf.get_queue()
        assert isinstance(queue, Queue)
        assert queue.name == "mails"
        assert queue.prefix == "custom"
        assert queue.connection is conf.get_connection("other")
        assert queue.connection.options == {"socket_timeout": 5}
        assert queue.default_job_options == JobOptions(attempts=4, backoff=500)
        job = queue.add("x", {})
        assert job.opts["attempts"] == 4
        assert conf.get_queue("unlisted").connection is conf.get_connection("default")


def test_connection_cached_per_alias(redis_url: str) -> None:
    with override_settings(BULLQ={"CONNECTIONS": {"default": redis_url}}):
        assert conf.get_connection("default") is conf.get_connection()
        assert conf.get_connection().sync_client().ping()


def test_unknown_alias_is_a_configuration_error(redis_url: str) -> None:
    from django.core.exceptions import ImproperlyConfigured

    with (
        override_settings(
            BULLQ={"CONNECTIONS": {"default": redis_url}, "QUEUES": {"q": {"CONNECTION": "nope"}}}
        ),
        pytest.raises(ImproperlyConfigured, match="no alias 'nope'"),
    ):
        conf.get_queue("q")


def test_bad_default_job_options_is_a_configuration_error(redis_url: str) -> None:
    with (
        override_settings(
            BULLQ={
                "CONNECTIONS": {"default": redis_url},
                "QUEUES": {"q": {"DEFAULT_JOB_OPTIONS": {"priority": -1}}},
            }
        ),
        pytest.raises(conf.ConfigurationError, match="priority"),
    ):
        conf.get_queue("q")


@pytest.mark.parametrize(
    "bullq", ["redis://x", {"CONNECTIONS": []}, {"CONNECTIONS": {"default": 5}}]
)
def test_malformed_settings_raise(bullq: object) -> None:
    with override_settings(BULLQ=bullq), pytest.raises(conf.ConfigurationError):
        conf.get_config()


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError):
        conf.bullq_settings.NOPE  # noqa: B018
