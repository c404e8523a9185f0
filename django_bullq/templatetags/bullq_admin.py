"""Template filters of the queue admin pages (``{% load bullq_admin %}``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def ms_time(value: Any) -> str:
    """A BullMQ timestamp (epoch **ms**, e.g. ``timestamp``, ``processedOn``) as
    ``YYYY-MM-DD HH:MM:SS.mmm UTC``; ``"–"`` when empty, zero or not a number."""
    try:
        ms = int(value)
    except (TypeError, ValueError):
        return "–"
    if ms <= 0:
        return "–"
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


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
