"""The admin when a queue's Redis cannot be reached: what the pages say instead of a 500.

A page of one queue (its list, a job, its metrics, their JSON) answers 503 with the reason;
pages of many queues (the overview, the Schedules page) list that queue as unreachable beside
the others (:func:`reason`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse

from ..core.clients import UNREACHABLE_ERRORS, ErrorClasses
from ..core.errors import RedisUnavailableError

#: What an unreachable Redis raises: the client library's connection errors (the admin reads
#: with the connection's client directly: redis-py's or valkey-py's) and ours
#: (``RedisUnavailableError``, a subclass of redis-py's).
DOWN: ErrorClasses = (*UNREACHABLE_ERRORS, RedisUnavailableError)


def reason(exc: BaseException) -> str:
    """``"Redis unreachable: <error>"``: redis-py's message names the address, never the
    password."""
    return f"Redis unreachable: {exc}"


def answers_when_down(
    view: Callable[..., HttpResponse],
    page_context: Callable[..., dict[str, Any]],
    *,
    json: bool = False,
) -> Any:
    """``view`` answering 503 with :func:`reason` when Redis cannot be reached, as a page
    (``admin/django_bullq/unreachable.html``, its context from ``page_context``, the admin's
    :func:`~django_bullq.admin.views.page_context`) or, with ``json``, ``{"error": reason}``."""

    @functools.wraps(view)
    def wrapped(model_admin: Any, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return view(model_admin, request, *args, **kwargs)
        except DOWN as exc:
            if json:
                return JsonResponse({"error": reason(exc)}, status=503)
            context = page_context(model_admin, request, "Redis unreachable", error=reason(exc))
            return TemplateResponse(
                request, "admin/django_bullq/unreachable.html", context, status=503
            )

    return wrapped
