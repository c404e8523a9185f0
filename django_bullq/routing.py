"""WebSocket routes of the events consumers: include in your ASGI ``URLRouter``.

``websocket_urlpatterns`` matches ``ws/bullq/queues/<queue>/`` and
``ws/bullq/jobs/<queue>/<job id>/``. Names are percent-encoded in the URL (any character the
core allows: ``/``, ``#``, spaces, unicode). ASGI servers give the router a decoded path, so
the consumers read the names from the still-encoded ``raw_path`` (Daphne and Uvicorn send it);
the patterns below only route, and are the decoded fallback without ``raw_path``.
"""

from __future__ import annotations

from django.urls import re_path

from .live.consumers import JobEventsConsumer, QueueEventsConsumer, UnknownRouteConsumer

# django-stubs types re_path's view as an HTTP view; Channels' URLRouter takes ASGI apps.
websocket_urlpatterns = [
    re_path(r"^ws/bullq/queues/(?P<queue>.+)/$", QueueEventsConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"^ws/bullq/jobs/(?P<queue>.+)/(?P<job_id>[^/]+)/$", JobEventsConsumer.as_asgi()),  # type: ignore[arg-type]
    # anything else under ws/bullq/ is a bad request (4400), not an unrouted socket (HTTP 500)
    re_path(r"^ws/bullq/", UnknownRouteConsumer.as_asgi()),  # type: ignore[arg-type]
]
