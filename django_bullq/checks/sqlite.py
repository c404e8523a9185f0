"""W002: ``runworker`` concurrency above 1 over SQLite databases that begin DEFERRED."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage
from django.core.checks import Warning as CheckWarning

from .settings import bullq_settings


def sqlite_deferred_aliases(databases: dict[str, Any] | None = None) -> list[str]:
    """Aliases of ``settings.DATABASES`` (or ``databases``) on SQLite without
    ``OPTIONS["transaction_mode"] == "IMMEDIATE"`` (Django >= 5.1), sorted."""
    if databases is None:
        from django.conf import settings

        databases = settings.DATABASES
    found = []
    for alias, entry in databases.items():
        if not isinstance(entry, dict) or "sqlite3" not in str(entry.get("ENGINE", "")):
            continue
        options = entry.get("OPTIONS") or {}
        mode = options.get("transaction_mode") if isinstance(options, dict) else None
        if str(mode or "").upper() != "IMMEDIATE":
            found.append(alias)
    return sorted(found)


def sqlite_concurrency_warning(concurrency: int, aliases: list[str]) -> CheckWarning:
    """W002 for ``concurrency`` > 1 over the SQLite databases ``aliases`` that begin their
    transactions DEFERRED (shared by the system check and ``runworker --concurrency``)."""
    return CheckWarning(
        f"runworker runs {concurrency} jobs at once per queue, and SQLite database(s) "
        f"{', '.join(repr(a) for a in aliases)} begin transactions DEFERRED: two jobs that "
        "write at once fail with 'database is locked'.",
        hint="Set DATABASES[alias]['OPTIONS'] = {'transaction_mode': 'IMMEDIATE', "
        "'timeout': 20} (Django >= 5.1), use another database, or run with concurrency 1.",
        id="django_bullq.W002",
    )


def check_sqlite_concurrency(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W002 ``BULLQ["WORKER"]["CONCURRENCY"]`` > 1 with a SQLite database that is not in
    ``transaction_mode`` IMMEDIATE."""
    raw = bullq_settings()
    worker = raw.get("WORKER", {}) if raw is not None else {}
    concurrency = worker.get("CONCURRENCY", 1) if isinstance(worker, dict) else 1
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency <= 1:
        return []
    aliases = sqlite_deferred_aliases()
    return [sqlite_concurrency_warning(concurrency, aliases)] if aliases else []
