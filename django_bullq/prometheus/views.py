"""The Prometheus metrics view (docs/observability.md): mount it in ``urls.py``::

    from django_bullq.prometheus.views import metrics

    urlpatterns = [path("bullq/metrics", metrics)]

Who may read it: a scraper sending ``Authorization: Bearer <BULLQ["PROMETHEUS"]["TOKEN"]>``
(compared in constant time), or a logged-in user holding ``BULLQ["PROMETHEUS"]["PERMISSION"]``
(``django_bullq.view_bullqqueue`` by default, as the admin's pages). Anyone else gets 403.
"""

from __future__ import annotations

import hmac

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ..conf import get_config


def allowed(request: HttpRequest) -> bool:
    """True when ``request`` carries the configured bearer token or comes from a logged-in
    user with the configured permission (either unset: that way is closed)."""
    settings = get_config()["PROMETHEUS"]
    token = settings["TOKEN"]
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if token and scheme.lower() == "bearer":
        return hmac.compare_digest(given.strip().encode(), str(token).encode())
    permission = settings["PERMISSION"]
    user = getattr(request, "user", None)
    return bool(
        permission and user is not None and user.is_authenticated and user.has_perm(permission)
    )


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The exposition of every known queue (Prometheus's text format, or OpenMetrics when the
    ``Accept`` header asks for it); 403 when the request is not :func:`allowed`.

    Raises:
        django.core.exceptions.ImproperlyConfigured: ``prometheus_client`` is not installed
            (the ``prometheus`` extra). It is imported here, not with this module, so that a
            ``urls.py`` naming the view loads in a process without it (a worker, a command).
    """
    if not allowed(request):
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    try:
        from .exposition import exposition
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"{exc}: the metrics view needs the prometheus extra "
            "(pip install 'django-bullq[prometheus]')"
        ) from exc
    body, content_type = exposition(request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)
