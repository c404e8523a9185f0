"""W001: ``manage.py runworker`` belongs to another app (Channels ships one too).

Also the stop before such a command runs: :func:`refuse_foreign_runworker`, called from
``AppConfig.ready``.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage
from django.core.checks import Warning as CheckWarning

#: Environment variable that lets another app's ``runworker`` (Channels') run on purpose.
FOREIGN_RUNWORKER_ENV = "BULLQ_FOREIGN_RUNWORKER"


def runworker_owner() -> str | None:
    """The app whose command ``manage.py runworker`` runs (None: no app ships one)."""
    from django.core.management import get_commands

    return get_commands().get("runworker")


def foreign_runworker_message(owner: str) -> str:
    """What to do when ``manage.py runworker`` is ``owner``'s command, not django_bullq's."""
    return (
        f"'manage.py runworker' is the command of {owner!r} here, not django_bullq's: "
        f"{owner!r} is listed above 'django_bullq' in INSTALLED_APPS, and Django runs the "
        "command of the app listed first. List 'django_bullq' above "
        f"{owner!r} in INSTALLED_APPS, or run 'manage.py bullq runworker [queue ...]' "
        f"(the same command). To run the runworker of {owner!r} on purpose, set "
        f"{FOREIGN_RUNWORKER_ENV}=1."
    )


def refuse_foreign_runworker(argv: list[str]) -> None:
    """Stop ``manage.py runworker`` (``argv``) with :func:`foreign_runworker_message` when the
    name belongs to another app, before that app's command parses django_bullq's arguments
    (Channels' prints its usage text). Called from ``AppConfig.ready``.

    Raises:
        SystemExit: 1, after writing the message to stderr.
    """
    import os
    import sys

    if argv[1:2] != ["runworker"] or os.environ.get(FOREIGN_RUNWORKER_ENV) == "1":
        return
    owner = runworker_owner()
    if owner is not None and owner != "django_bullq":
        sys.stderr.write(f"CommandError: {foreign_runworker_message(owner)}\n")
        raise SystemExit(1)


def check_runworker_command(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W001 ``manage.py runworker`` resolves to another app's command (e.g. Channels')."""
    owner = runworker_owner()
    if owner is not None and owner != "django_bullq":
        return [
            CheckWarning(
                f"'manage.py runworker' runs the command of {owner!r}, not django_bullq's.",
                hint="List 'django_bullq' above 'channels' (and any other app shipping a "
                "runworker command) in INSTALLED_APPS; the app listed first wins. "
                "'manage.py bullq runworker' runs django_bullq's worker either way.",
                id="django_bullq.W001",
            )
        ]
    return []
