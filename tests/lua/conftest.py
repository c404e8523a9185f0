"""Fixtures of the Lua script tests: one fresh queue per test, driven through LuaQueue."""

from __future__ import annotations

import pytest
import redis

from django_bullq.core.keys import QueueKeys
from tests.lua.helpers import LuaQueue


@pytest.fixture
def lq(r: redis.Redis, queue_name: str) -> LuaQueue:
    """The test's queue on the session's private redis-server."""
    return LuaQueue(r, QueueKeys(queue_name))
