"""Template tags and filters of the queue admin pages (``{% load bullq_admin %}``).

The formatting itself is :mod:`django_bullq.admin.display`.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..admin import display

register = template.Library()


@register.simple_tag
def bullq_time(ms: Any, field: str = "") -> SafeString:
    """``{% bullq_time job.processed_on "processedOn" %}``: a ``<time>`` in local time with UTC
    on hover (:func:`~django_bullq.admin.display.time_html`)."""
    return display.time_html(_number(ms), field)


@register.simple_tag
def bullq_duration(ms: Any, field: str = "") -> SafeString:
    """``{% bullq_duration job.delay %}``: ms in units, the ms on hover
    (:func:`~django_bullq.admin.display.duration_html`)."""
    return display.duration_html(_number(ms), field)


@register.simple_tag
def bullq_failure(job: Any, state: str) -> str:
    """A job list's failure text (:func:`~django_bullq.admin.display.list_failure`); escaped
    by the template like any value."""
    return display.list_failure(job, state)


@register.simple_tag
def bullq_progress(job: Any) -> str:
    """A job list's progress cell: the progress the job reported (as text), "" when it never
    reported any (BullMQ then reads 0)."""
    return str(job.progress) if display.progress_reported(job) else ""


def _number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@register.simple_tag(takes_context=True)
def bullq_nonce_attr(context: template.Context) -> str:
    """`` nonce="…"`` (with its leading space) when the context has a ``csp_nonce``, else ``""``.

    ``csp_nonce`` is what Django 6's ``django.template.context_processors.csp`` provides with
    ``ContentSecurityPolicyMiddleware``; Django 5.2 has neither, and the tags go without. The
    admin pages' scripts and stylesheet are files of this origin, so ``'self'`` alone admits
    them; the nonce is for policies where it does not (``'strict-dynamic'``), as Django 6.1's
    own ``{% csp_nonce_attr %}`` on the admin's tags.
    """
    nonce = context.get("csp_nonce")
    if nonce is None:
        return ""
    return format_html(' nonce="{}"', nonce)
