"""The former path of the on-commit rule, kept for code that imports ``Pending`` from it.

The code lives in :mod:`django_bullq.producer.transaction`; this module only re-exports it:
the names of that module's ``__all__``.
"""

from .producer import transaction as _home
from .producer.transaction import *  # noqa: F403 - exactly _home.__all__

__all__ = _home.__all__
