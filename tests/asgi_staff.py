"""ASGI app of the delivery tests under daphne: the events routes, every socket a staff user.

Logins, sessions and permissions are tested through ``AuthMiddlewareStack`` in
``tests/django/test_events_ws.py`` (and the browser tests); the daphne delivery tests measure what
reaches a socket, so their sockets get a staff user without a database.
"""

from typing import Any

from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 - after Django setup

from django_bullq.routing import websocket_urlpatterns  # noqa: E402


class Staff:
    """What ``AuthMiddleware`` would put in the scope for a permitted staff user."""

    is_authenticated = True
    is_active = True
    is_staff = True

    def has_perm(self, perm: str) -> bool:
        return perm == "django_bullq.view_bullqqueue"


_router = URLRouter(websocket_urlpatterns)


async def _as_staff(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await _router(dict(scope, user=Staff()), receive, send)


application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": _as_staff})
