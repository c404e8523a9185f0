"""tests.settings on a private PostgreSQL (case B29), for `runworker` subprocesses.

Environment: BULLQ_TEST_PG_PORT (required), BULLQ_TEST_CONN_MAX_AGE ("none" or seconds),
BULLQ_TEST_CONN_HEALTH_CHECKS ("1" or "0"), BULLQ_TEST_PG_USER / BULLQ_TEST_PG_NAME (default
"bullq" / "postgres").
"""

import os

from tests.settings import *  # noqa: F403

_max_age = os.environ.get("BULLQ_TEST_CONN_MAX_AGE", "0")

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("BULLQ_TEST_PG_NAME", "postgres"),
        "USER": os.environ.get("BULLQ_TEST_PG_USER", "bullq"),
        "HOST": "127.0.0.1",
        "PORT": os.environ["BULLQ_TEST_PG_PORT"],
        "CONN_MAX_AGE": None if _max_age == "none" else int(_max_age),
        "CONN_HEALTH_CHECKS": os.environ.get("BULLQ_TEST_CONN_HEALTH_CHECKS") == "1",
    }
}
