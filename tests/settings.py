"""Django settings for the test suite: admin, auth, channels, django_bullq on a private Redis."""

import json
import os
import tempfile

import django

from tests.support.redis_server import session_server

REDIS_URL = session_server().url

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# A cheap hasher: each admin test creates a user, and the default PBKDF2 costs ~0.9 s a hash.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
INSTALLED_APPS = [
    "django_bullq",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "channels",
    "tests.testapp",
]
if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")  # the django.tasks backport (Django 5.2)
# Django's tasks framework on bullq (docs/django-tasks.md); QUEUES [] allows the per-test queues.
TASKS = {
    "default": {"BACKEND": "django_bullq.backends.BullQBackend", "QUEUES": []},
}
# A file (not :memory:) test database: worker threads open their own connections, and closing
# a connection must really close it (cases B29, B30). One file per test process.
# A second alias ("other") for the multi-database on-commit and outbox tests.
DATABASES = {
    alias: {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": ":memory:",
        "TEST": {
            "NAME": os.path.join(tempfile.gettempdir(), f"bullq-test-{alias}-{os.getpid()}.sqlite3")
        },
    }
    for alias in ("default", "other")
}
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
BULLQ = {
    "CONNECTIONS": {"default": {"URL": REDIS_URL}},
    "DEFAULT_QUEUE": "default",
    # runworker subprocesses started by tests may get short lock / stalled intervals (case B10)
    "WORKER": json.loads(os.environ.get("BULLQ_TEST_WORKER", "{}")),
    # runworker subprocesses started by the scheduler tests (case B16) declare schedulers
    "SCHEDULERS": json.loads(os.environ.get("BULLQ_TEST_SCHEDULERS", "{}")),
}
# Events over WebSockets (django_bullq.live.consumers): the in-memory layer (channels_redis in
# production); daphne subprocesses of the delivery tests may get another through the environment.
CHANNEL_LAYERS = json.loads(os.environ.get("BULLQ_TEST_CHANNEL_LAYERS", "null")) or {
    "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}
}
ASGI_APPLICATION = "tests.asgi.application"
