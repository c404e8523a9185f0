"""docs/serving.md's snippets, as written: its ``asgi.py`` and its production channel layer
(issue 15, item 9), and the short ``asgi.py`` of docs/events.md. Each ``asgi.py`` block is
executed, then driven over ASGI: a static file answers under DEBUG (serving.md's), a socket
from a foreign origin is refused, one from the site's origin reaches django_bullq's consumer
(which refuses the anonymous user with 4403)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.testing import WebsocketCommunicator
from django.utils.module_loading import import_string

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "serving.md"


def block(first_line: str, doc: Path = DOC) -> str:
    """The fenced ``python`` block of ``doc`` whose first line is ``first_line``."""
    for body in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
        if body.splitlines()[0] == first_line:
            return str(body)
    raise AssertionError(f"no python block opening with {first_line!r} in {doc.name}")


def build(settings: Any, doc: Path) -> Any:
    """The ``application`` of ``doc``'s ``asgi.py`` block, built under DEBUG with staticfiles."""
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["admin.example.com"]
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "django.contrib.staticfiles"]
    settings.STATIC_URL = "static/"
    namespace: dict[str, Any] = {"__name__": "mysite.asgi"}
    exec(compile(block("# asgi.py", doc), str(doc), "exec"), namespace)
    return namespace["application"]


@pytest.fixture(params=["serving.md", "events.md"])
def served(settings: Any, request: pytest.FixtureRequest) -> Any:
    """serving.md's whole ``asgi.py``, and the short one of events.md."""
    return build(settings, DOCS / request.param)


async def test_the_documented_asgi_py_serves_static_files_under_debug(settings: Any) -> None:
    served = build(settings, DOC)
    path = "/static/django_bullq/js/bullq-events.js"
    comm = ApplicationCommunicator(
        served,
        {"type": "http", "method": "GET", "path": path, "query_string": b"", "headers": []},
    )
    await comm.send_input({"type": "http.request", "body": b""})
    start = await comm.receive_output(timeout=5)
    body = b""
    while True:  # a FileResponse streams; its last message may carry no body
        chunk = await comm.receive_output(timeout=5)
        body += chunk.get("body", b"")
        if not chunk.get("more_body"):
            break
    assert start["status"] == 200
    assert b"BullqEvents" in body


async def test_the_documented_asgi_py_refuses_sockets_from_other_origins(served: Any) -> None:
    path = f"/ws/bullq/queues/q-{uuid.uuid4().hex[:8]}/"
    foreign = WebsocketCommunicator(served, path, headers=[(b"origin", b"https://evil.example")])
    connected, _code = await foreign.connect(timeout=5)
    assert connected is False  # AllowedHostsOriginValidator, before any consumer
    own = WebsocketCommunicator(
        served,
        path,
        headers=[(b"origin", b"https://admin.example.com"), (b"host", b"admin.example.com")],
    )
    connected, _code = await own.connect(timeout=5)
    assert connected is True  # through the validator and the auth stack to the consumer,
    closed = await own.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4403}  # which refuses an anonymous user


async def test_the_documented_channel_layer_carries_messages(redis_url: str) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block("# settings.py, production channel layer"), str(DOC), "exec"), namespace)
    layers = namespace["CHANNEL_LAYERS"]
    config = layers["default"]["CONFIG"]
    documented = config["hosts"][0]["address"]
    assert urlsplit(documented).path == "/1" and config["hosts"][0]["socket_timeout"] is None
    test_server = urlsplit(redis_url)._replace(path="/1").geturl()
    config["hosts"][0]["address"] = test_server  # the tests' own Redis, never 6379
    layer = import_string(layers["default"]["BACKEND"])(**config)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "bullq.wake"})
    assert await layer.receive(channel) == {"type": "bullq.wake"}
    await layer.flush()
