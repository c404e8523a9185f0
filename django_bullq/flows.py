"""The public import path of flows from Django (``from django_bullq.flows import add_flow``).

The code lives in :mod:`django_bullq.producer.flows`; this module only re-exports it, under
the path docs/flows.md gives: the names of that module's ``__all__``.
"""

from .producer import flows as _home
from .producer.flows import *  # noqa: F403 - exactly _home.__all__

__all__ = _home.__all__
