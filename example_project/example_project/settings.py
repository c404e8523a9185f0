"""Settings of the django_bullq example project.

Read from the environment with django-environ:

``REDIS_URL``
    Redis of the queues, default ``redis://127.0.0.1:6379/0`` (``make demo`` starts one there
    when none answers).
``DATABASE_URL``
    default SQLite in ``example_project/db.sqlite3``.
``EMAIL_FILE_PATH``
    where the file email backend writes, default ``example_project/sent_emails/``.
``WEATHER_REPORT_TO``
    recipient of the emailed report.
"""

from __future__ import annotations

from pathlib import Path

import django
import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

SECRET_KEY = env.str("SECRET_KEY", default="django-bullq-example-not-secret")
DEBUG = env.bool("DEBUG", default=True)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")

INSTALLED_APPS = [
    # daphne first: its `runserver` serves HTTP and the admin's WebSockets (ASGI).
    "daphne",
    # django_bullq above channels: both ship a `runworker` command and the first app wins.
    "django_bullq",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "weather",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
WSGI_APPLICATION = "example_project.wsgi.application"
ASGI_APPLICATION = "example_project.asgi.application"

# The admin's live updates go from each server process's events reader to its sockets through
# the channel layer. One daphne process: the in-memory layer does. Several processes or hosts:
# channels_redis ("channels_redis.core.RedisChannelLayer").
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# A strict Content-Security-Policy (Django 6's own middleware; docs/admin.md, "Content Security
# Policy"): no inline script or style anywhere, scripts from this origin or with the request's
# nonce. The admin's events WebSockets are same-origin, which 'self' covers. Django 5.2 has no
# CSP middleware (django-csp can send the same policy there).
if django.VERSION >= (6, 0):
    from django.utils.csp import CSP

    MIDDLEWARE.insert(1, "django.middleware.csp.ContentSecurityPolicyMiddleware")
    SECURE_CSP = {
        "default-src": [CSP.SELF],
        "script-src": [CSP.SELF, CSP.NONCE],
    }
    # {{ csp_nonce }}: Django's admin (6.1+) and django_bullq's pages put it on their tags
    TEMPLATES[0]["OPTIONS"]["context_processors"].append("django.template.context_processors.csp")

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several worker threads write at once: take the write lock at BEGIN and wait for it.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

# Mail goes to files: Django's file email backend writes each message under EMAIL_DIR.
EMAIL_DIR = Path(env.str("EMAIL_FILE_PATH", default=str(BASE_DIR / "sent_emails")))
if django.VERSION >= (6, 1):
    # Django 6.1 configures mail through MAILERS (EMAIL_BACKEND is deprecated there).
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "OPTIONS": {"file_path": str(EMAIL_DIR)},
        },
    }
else:
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = str(EMAIL_DIR)
DEFAULT_FROM_EMAIL = "weather@example.com"
WEATHER_REPORT_TO = env.list("WEATHER_REPORT_TO", default=["forecasters@example.com"])

BULLQ = {
    "CONNECTIONS": {"default": {"URL": REDIS_URL}},
    "DEFAULT_QUEUE": "default",
    # per-minute completed/failed counts (two weeks, as BullMQ's MetricsTime.ONE_WEEK * 2):
    # the admin's throughput chart
    "WORKER": {"METRICS_MAX_DATA_POINTS": 20160},
    "QUEUES": {
        # Keep the newest 1000 finished jobs of each kind, so repeated demos stay small.
        "weather": {
            "CONNECTION": "default",
            "DEFAULT_JOB_OPTIONS": {"remove_on_complete": 1000, "remove_on_fail": 1000},
        },
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_bullq": {"handlers": ["console"], "level": "WARNING"}},
}
