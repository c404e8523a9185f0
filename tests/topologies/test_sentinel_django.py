"""Sentinel from ``settings.BULLQ`` as docs/redis-topologies.md shows it: the data password and
the database in ``OPTIONS`` or in the URL, a database index the server lacks, and the address
the admin shows. One Sentinel set whose data nodes need a password, for the module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.test import override_settings

from django_bullq.admin.server import where
from django_bullq.conf import get_queue
from django_bullq.core.errors import ConnectionConfigError
from tests.support.helpers_django import burst
from tests.support.redis_sentinel import SentinelSet
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_layer

PASSWORD = "s3cr:t@pw"


@pytest.fixture(scope="module")
def protected() -> Iterator[SentinelSet]:
    deployment = SentinelSet(password=PASSWORD).start()
    yield deployment
    deployment.cleanup()


def sentinel_url(deployment: SentinelSet, path: str, password: str = "") -> str:
    hosts = ",".join(f"127.0.0.1:{s.port}" for s in deployment.sentinels)
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis+sentinel://{auth}{hosts}/{path}"


def connection_of(deployment: SentinelSet, how: str) -> dict[str, Any]:
    if how == "options":  # docs/redis-topologies.md's own example, with a database
        return {
            "URL": sentinel_url(deployment, deployment.service),
            "OPTIONS": {"password": PASSWORD, "db": 2},
        }
    return {"URL": sentinel_url(deployment, f"{deployment.service}/2", PASSWORD)}


@pytest.mark.parametrize("how", ["options", "url"])
def test_the_documented_sentinel_settings_add_and_run_a_job(
    protected: SentinelSet, queue_name: str, how: str
) -> None:
    """The password and database given in OPTIONS (as the docs show) or in the URL: the job
    lands in database 2 of the master and a worker runs it. With OPTIONS, redis-py's Sentinel
    was given ``password`` twice (``TypeError: got multiple values``)."""
    with override_settings(BULLQ={"CONNECTIONS": {"default": connection_of(protected, how)}}):
        job = sample.add.using(queue=queue_name).enqueue(2, b=3)
        master = protected.master.client(db=2)
        try:
            assert master.exists(f"bull:{queue_name}:{job.id}")
        finally:
            master.close()
        burst(queue_name)
        assert job.wait(timeout=5) == 5
        get_queue(queue_name).obliterate(force=True)


def test_a_database_the_master_lacks_is_named(protected: SentinelSet, queue_name: str) -> None:
    """``/mymaster/99`` on a server of 16 databases: the error names database 99 and the
    Sentinel URL form (it said "database -1" and pointed at ``redis://host:port/<db>``)."""
    url = sentinel_url(protected, f"{protected.service}/99", PASSWORD)
    with (
        override_settings(BULLQ={"CONNECTIONS": {"default": {"URL": url}}}),
        pytest.raises(ConnectionConfigError) as error,
    ):
        sample.add.using(queue=queue_name).enqueue(1, b=1)
    message = str(error.value)
    assert "database 99 does not exist" in message
    assert "/<service>/<db>" in message
    assert PASSWORD not in message and quote(PASSWORD, safe="") not in message


def test_the_admin_shows_where_a_sentinel_connection_points() -> None:
    """Several ``host:port`` in one URL: ``urlsplit().port`` refuses them, and the admin's
    Connection column was blank."""
    url = f"redis+sentinel://:{quote(PASSWORD, safe='')}@10.0.0.1:26379,10.0.0.2:26380/mymaster/2"
    shown = where(url)
    assert shown == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/mymaster/2"
    assert where("redis://:pw@cache.internal:6380/1") == "redis://cache.internal:6380/1"


def test_sentinels_that_refuse_the_password_say_so_not_unreachable(queue_name: str) -> None:
    """Sentinels with a ``requirepass`` of their own and no ``sentinel_kwargs``: redis-py
    wraps their ``AuthenticationError`` in ``MasterNotFoundError``, which read as an outage
    ("cannot reach Redis"). A wrong password is no outage: a ConnectionConfigError that says
    where the sentinels' password goes. With it there, the add works."""
    deployment = SentinelSet(sentinel_password="sentinel-pw").start()
    try:
        url = sentinel_url(deployment, deployment.service)
        with (
            override_settings(BULLQ={"CONNECTIONS": {"default": {"URL": url}}}),
            pytest.raises(ConnectionConfigError, match="sentinel_kwargs") as error,
        ):
            sample.add.using(queue=queue_name).enqueue(1, b=1)
        assert "refused" in str(error.value) and "sentinel-pw" not in str(error.value)
        options = {"sentinel_kwargs": {"password": "sentinel-pw"}}
        with override_settings(
            BULLQ={"CONNECTIONS": {"default": {"URL": url, "OPTIONS": options}}}
        ):
            job = sample.add.using(queue=queue_name).enqueue(1, b=1)
            assert get_queue(queue_name).get_job_state(job.id) == "waiting"
    finally:
        deployment.cleanup()
