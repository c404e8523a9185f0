"""E010: a ``BULLQ["SCHEDULERS"]`` entry that ``runworker`` could not upsert."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage

from ..core.errors import BullqError
from ..core.names import validate_queue_name
from .settings import bullq_settings, error


def check_schedulers(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E010 a ``BULLQ["SCHEDULERS"]`` entry that ``runworker`` could not upsert."""
    from ..core.options import now_ms
    from ..core.scheduler import _repeat_args, _template_opts
    from ..core.serialization import dumps
    from ..producer.schedules import entry_call

    raw = bullq_settings()
    schedulers = raw.get("SCHEDULERS", {}) if raw is not None else {}
    hint = "See docs/schedulers.md."
    if not isinstance(schedulers, dict):
        return [error(10, "BULLQ['SCHEDULERS'] must be a dict of id -> entry.", hint)]
    errors: list[CheckMessage] = []
    for scheduler_id, entry in schedulers.items():
        try:
            if not isinstance(scheduler_id, str) or not scheduler_id:
                raise ValueError("the id must be a non-empty string")
            queue, repeat, template = entry_call(scheduler_id, entry)
            validate_queue_name(queue)
            _repeat_args(scheduler_id, repeat, now_ms())
            _template_opts(template.get("opts"))
            dumps(template.get("data"), "data")
        except (BullqError, ValueError, TypeError) as exc:
            where = f"BULLQ['SCHEDULERS'][{scheduler_id!r}]"
            text = str(exc)  # entry_call's errors already say where
            errors.append(error(10, text if text.startswith(where) else f"{where}: {text}", hint))
    return errors
