"""The event loop a worker process runs on: uvloop when it is installed, else asyncio's own.

``BULLQ["WORKER"]["EVENT_LOOP"]`` (``WorkerOptions.event_loop``) chooses: ``"auto"`` (uvloop
if importable), ``"uvloop"`` (required) or ``"asyncio"``. uvloop's loop spends less CPU per
callback and socket operation, which a worker running thousands of short jobs a second feels;
install it with ``pip install "django-bullq[uvloop]"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

#: Accepted values of ``EVENT_LOOP``.
EVENT_LOOPS = ("auto", "asyncio", "uvloop")


def loop_factory(choice: str = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The loop factory for ``choice``: uvloop's, or None for asyncio's default loop.

    Raises:
        ValueError: ``choice`` is not one of :data:`EVENT_LOOPS`.
        ImportError: ``"uvloop"`` was asked for and uvloop is not installed.
    """
    if choice not in EVENT_LOOPS:
        raise ValueError(f"event loop must be one of {', '.join(EVENT_LOOPS)}, got {choice!r}")
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ImportError(
                "BULLQ['WORKER']['EVENT_LOOP'] is 'uvloop' but uvloop is not "
                "installed: pip install 'django-bullq[uvloop]'"
            ) from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, Any], choice: str = "auto") -> Any:
    """Run ``main`` to completion on a new loop of ``choice`` (like :func:`asyncio.run`).

    Returns:
        What ``main`` returns.

    Raises:
        ValueError: an unknown ``choice`` (``main`` is closed, never run).
        ImportError: ``"uvloop"`` without uvloop installed (``main`` is closed, never run).
    """
    try:
        factory = loop_factory(choice)
    except (ValueError, ImportError):
        main.close()
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
