"""Settings of the soak's worker processes (``python -m django runworker soak``).

The soak controller passes the queue Redis in ``BULLQ_SOAK_REDIS_URL`` and the effects Redis in
``BULLQ_SOAK_EFFECTS_URL``. Short lock and stalled intervals make SIGKILLed jobs come back within
about 6 s (lock 4 s + stalled check every 2 s), so a run of a few minutes sees every recovery.
"""

import os

SECRET_KEY = "soak-only-not-secret"
DEBUG = False
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django_bullq",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "reliability.soakapp",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
BULLQ = {
    "CONNECTIONS": {
        "default": {"URL": os.environ.get("BULLQ_SOAK_REDIS_URL", "redis://127.0.0.1:6379/0")}
    },
    "DEFAULT_QUEUE": "soak",
    "WORKER": {
        "LOCK_DURATION": 4_000,
        "STALLED_INTERVAL": 2_000,
        # A job may be caught by several kills in a row; it must come back, not fail.
        "MAX_STALLED_COUNT": 20,
        "DRAIN_DELAY": 1.0,
        "GRACE_PERIOD": 10.0,
        "MAINTENANCE_INTERVAL": 0,
    },
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django_bullq": {"handlers": ["stderr"], "level": "WARNING"}},
}
