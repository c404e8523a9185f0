"""The Metrics page of a queue: jobs per step, run and wait percentiles, per job name.

``q/<queue>/metrics/?window=1h|6h|24h|72h&name=<job name>`` (``QueueAdmin.get_urls``, the
view permission). Charts are server-side SVG (:mod:`django_bullq.admin.charts`); the data is
what the workers recorded (:mod:`django_bullq.core.metrics`, docs/metrics.md).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from ..core.metrics import WINDOWS
from . import data, metrics
from .forms import errors_text
from .views import ModelAdminBase, page_context, queue_or_404, require


class MetricsForm(forms.Form):
    """The page's query (GET): ``window`` (default ``1h``) and an optional job ``name``."""

    window = forms.ChoiceField(choices=[(w, w) for w in WINDOWS], required=False)
    name = forms.CharField(required=False, max_length=1000, strip=False)


def metrics_view(model_admin: ModelAdminBase, request: HttpRequest, queue: str) -> HttpResponse:
    """The queue's metrics over the asked window, for every job name or one.

    A bad ``window`` shows the last hour with a message saying why.

    Raises:
        django.http.Http404: no valid queue name.
    """
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    query = MetricsForm(request.GET)
    if not query.is_valid():
        messages.warning(request, f"Showing the last hour: {errors_text(query)}")
    window = query.cleaned_data.get("window") or "1h"
    name = query.cleaned_data.get("name") or None
    return TemplateResponse(
        request,
        "admin/django_bullq/metrics.html",
        page_context(
            model_admin,
            request,
            f"Metrics of queue {queue}" + (f", job name {name}" if name else ""),
            queue=q,
            window=window,
            name=name,
            latency=data.waiting_latency_ms(q),
            **metrics.page(q, window, name),
        ),
    )


def urls(bind: Any) -> list[Any]:
    """The page's URL pattern, each view wrapped by ``bind`` (``QueueAdmin.get_urls``)."""
    return [
        path(
            "q/<bullqname:queue>/metrics/",
            bind(metrics_view),
            name="django_bullq_metrics",
        )
    ]
