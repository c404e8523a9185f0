"""The checks of ``BULLQ["PROMETHEUS"]`` (docs/observability.md): its shape (E002 / E003), a
token short enough to guess (W003), and settings under which the view refuses everyone (W004).
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage
from django.core.checks import Warning as CheckWarning

from ..conf import DEFAULTS
from ..core.metrics.store import MAX_NAMES
from .settings import _unknown_keys, bullq_settings, error

#: Characters below which a ``TOKEN`` draws W003.
MIN_TOKEN_CHARS = 16

_WHERE = "BULLQ['PROMETHEUS']"
_DOCS = "see docs/observability.md"


def _shape_errors(prom: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = list(_unknown_keys(prom, DEFAULTS["PROMETHEUS"], _WHERE))
    token = prom.get("TOKEN")
    if token is not None and not isinstance(token, str):
        errors.append(error(3, f"{_WHERE}['TOKEN'] must be a string or None.", _DOCS))
    permission = prom.get("PERMISSION", DEFAULTS["PROMETHEUS"]["PERMISSION"])
    if permission is not None and (not isinstance(permission, str) or "." not in permission):
        errors.append(
            error(3, f"{_WHERE}['PERMISSION'] must be 'app_label.codename' or None.", _DOCS)
        )
    tasks = prom.get("MAX_TASKS", DEFAULTS["PROMETHEUS"]["MAX_TASKS"])
    if isinstance(tasks, bool) or not isinstance(tasks, int) or not 0 <= tasks <= MAX_NAMES:
        errors.append(
            error(
                3, f"{_WHERE}['MAX_TASKS'] must be an int in 0..{MAX_NAMES}, got {tasks!r}.", _DOCS
            )
        )
    return errors


def check_prometheus(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E002 / E003 for the shape of ``BULLQ["PROMETHEUS"]``; W003 a ``TOKEN`` shorter than
    :data:`MIN_TOKEN_CHARS`; W004 neither ``TOKEN`` nor ``PERMISSION`` (the view answers 403
    to every request)."""
    raw = bullq_settings()
    if raw is None or "PROMETHEUS" not in raw:
        return []
    prom = raw["PROMETHEUS"]
    if not isinstance(prom, dict):
        return [error(3, f"{_WHERE} must be a dict.", _DOCS)]
    errors = _shape_errors(prom)
    if errors:
        return errors
    token = prom.get("TOKEN")
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        errors.append(
            CheckWarning(
                f"{_WHERE}['TOKEN'] is {len(token)} characters: short enough to guess.",
                hint='Use a random token, e.g. python -c "import secrets; '
                'print(secrets.token_urlsafe(32))"',
                id="django_bullq.W003",
            )
        )
    if not token and prom.get("PERMISSION", DEFAULTS["PROMETHEUS"]["PERMISSION"]) is None:
        errors.append(
            CheckWarning(
                f"{_WHERE} has neither a TOKEN nor a PERMISSION: the metrics view refuses "
                "every request.",
                hint="Set TOKEN for a scraper, or PERMISSION for logged-in users; " + _DOCS,
                id="django_bullq.W004",
            )
        )
    return errors
