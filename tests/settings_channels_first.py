"""The test settings with ``channels`` listed above ``django_bullq`` in INSTALLED_APPS (so
Channels owns ``manage.py runworker``), for the subprocess tests of that mistake."""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = ["channels", *(app for app in INSTALLED_APPS if app != "channels")]
