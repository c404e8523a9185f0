"""The Django layer's tests: every test here is also run against Django 5.2 LTS."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of tests/django/ ``django_layer`` (``make test``'s Django 5.2 pass)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.django_layer)


@pytest.fixture(autouse=True)
def _outbox_holds_nothing_from_another_test() -> None:
    """The relay holds a row whose move failed for HOLD_S s, by primary key; a later test's
    row may get the same key after the tables are flushed, so each test starts with none."""
    from django_bullq.producer import relay

    relay._held.since.clear()
