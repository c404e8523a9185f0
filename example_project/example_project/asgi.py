"""ASGI entry point of the example project: HTTP through Django, WebSockets through Channels.

Run it under daphne (``daphne example_project.asgi:application`` from ``example_project/``, or
``manage.py runserver``, which daphne takes over). ``/ws/bullq/...`` carries the queue events
the admin pages follow live (docs/events.md); static files are served here while DEBUG is on.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

# Django must be set up before the consumers (and through them the ORM) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from django_bullq.routing import websocket_urlpatterns  # noqa: E402

http_app = ASGIStaticFilesHandler(django_asgi_app) if settings.DEBUG else django_asgi_app

application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
