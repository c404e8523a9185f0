"""A WSGI-only server of the example project for the browser tests: HTTP and static files,
no WebSockets (as ``gunicorn mysite.wsgi`` behind a web server would be).

``python -m tests.browser.wsgi_server <port>`` (in ``example_project/``, its settings in
``DJANGO_SETTINGS_MODULE``). Django's own development server (``basehttp.run``, threaded) with
the static files handler; a socket's ``GET /ws/bullq/...`` gets Django's 404.
"""

from __future__ import annotations

import sys

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import run
from django.core.wsgi import get_wsgi_application


def main(port: int) -> None:
    run("127.0.0.1", port, StaticFilesHandler(get_wsgi_application()), threading=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
