"""A Sentry client whose envelopes stay in memory, for the tests of the Sentry integration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from django_bullq.core import instrument
from django_bullq.core import sentry as bullq_sentry
from django_bullq.core.sentry import BullQIntegration


class Capture(Transport):
    """Keeps every envelope the client sends."""

    def __init__(self) -> None:
        super().__init__()
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The JSON payloads of the items of type ``kind`` (``transaction``, ``event``,
        ``check_in``), in the order they were sent."""
        found = []
        for envelope in self.envelopes:
            for item in envelope.items:
                if item.type == kind and item.payload.json is not None:
                    found.append(item.payload.json)
        return found

    def transactions(self, op: str) -> list[dict[str, Any]]:
        return [t for t in self.items("transaction") if t["contexts"]["trace"]["op"] == op]


@pytest.fixture
def sentry(request: pytest.FixtureRequest) -> Iterator[Capture]:
    transport = Capture()
    sentry_sdk.init(
        dsn="https://public@sentry.invalid/1",
        transport=transport,
        traces_sample_rate=1.0,
        default_integrations=False,
        integrations=[BullQIntegration(**getattr(request, "param", {}))],
    )
    # sentry_sdk runs setup_once (which registers the hooks) once per process: register
    # them again for each test, and take them out after it (other tests count the hooks)
    instrument.register(bullq_sentry.INSTRUMENTATION)
    yield transport
    sentry_sdk.init()  # a client without the integration: the hooks do nothing
    instrument.unregister(bullq_sentry.INSTRUMENTATION)
