"""The former path of the WebSocket consumers, kept for settings and code that name it
(``BULLQ["EVENTS_AUTHORIZER"]`` wrappers of ``django_bullq.consumers.default_authorizer``).

The code lives in :mod:`django_bullq.live.consumers`; this module only re-exports it.
"""

from .live.consumers import (
    JobEventsConsumer,
    QueueEventsConsumer,
    UnknownRouteConsumer,
    authorize,
    default_authorizer,
)

__all__ = [
    "JobEventsConsumer",
    "QueueEventsConsumer",
    "UnknownRouteConsumer",
    "authorize",
    "default_authorizer",
]
