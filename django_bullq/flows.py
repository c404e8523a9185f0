"""The public import path of flows from Django (``from django_bullq.flows import add_flow``).

The code lives in :mod:`django_bullq.producer.flows`; this module only re-exports it, under
the path docs/flows.md gives.
"""

from .producer.flows import (
    aadd_chain,
    aadd_flow,
    add_chain,
    add_flow,
    check_one_home,
    flow_producer,
    with_job_ids,
)

__all__ = [
    "aadd_chain",
    "aadd_flow",
    "add_chain",
    "add_flow",
    "check_one_home",
    "flow_producer",
    "with_job_ids",
]
