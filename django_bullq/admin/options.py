"""``QueueAdmin``: the ModelAdmin of the placeholder model, serving the queue pages by name.

It holds the permissions and the URLs; the pages are in :mod:`django_bullq.admin.views`, the
actions in :mod:`django_bullq.admin.actions`.
"""

from __future__ import annotations

import functools
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import path, register_converter

from . import job_views, live, metrics_views, schedule_views, views
from .names import EncodedNameConverter
from .unreachable import answers_when_down

register_converter(EncodedNameConverter, "bullqname")


class QueueAdmin(views.ModelAdminBase):
    """Queue overview (changelist), per-queue job lists, job detail, POST-only actions, and
    the live pages' JSON (``live/`` beside each page, :mod:`django_bullq.admin.live`).

    No add/change/delete of the placeholder; every page needs ``django_bullq.view_bullqqueue``,
    every action its own permission (:attr:`~django_bullq.admin.actions.Action.permission`).
    """

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        """The queue pages under the placeholder's admin URL, each behind ``admin_view``."""
        wrap = self.admin_site.admin_view

        def bind(view: Any, *, json: bool = False) -> Any:
            # a Redis that does not answer: a 503 saying so, not a 500 (admin/unreachable.py)
            view = answers_when_down(view, views.page_context, json=json)
            return wrap(functools.update_wrapper(functools.partial(view, self), view))

        return [
            path("q/<bullqname:queue>/", bind(views.queue_view), name="django_bullq_queue"),
            path(
                "q/<bullqname:queue>/job/<bullqname:job_id>/",
                bind(views.job_view),
                name="django_bullq_job",
            ),
            path(
                "q/<bullqname:queue>/job/<bullqname:job_id>/flow/",
                bind(views.job_flow_part_view),
                name="django_bullq_job_flow",
            ),
            path(
                "q/<bullqname:queue>/new/",
                bind(job_views.new_job_view),
                name="django_bullq_new_job",
            ),
            path(
                "q/<bullqname:queue>/job/<bullqname:job_id>/edit-retry/",
                bind(job_views.edit_retry_view),
                name="django_bullq_edit_retry",
            ),
            path(
                "q/<bullqname:queue>/live/",
                bind(live.queue_live_view, json=True),
                name="django_bullq_queue_live",
            ),
            path(
                "q/<bullqname:queue>/job/<bullqname:job_id>/live/",
                bind(live.job_live_view, json=True),
                name="django_bullq_job_live",
            ),
            path("live/", bind(live.overview_live_view, json=True), name="django_bullq_live"),
            path(
                "q/<bullqname:queue>/action/<slug:action>/",
                bind(views.action_view),
                name="django_bullq_action",
            ),
            *schedule_views.urls(bind),
            *metrics_views.urls(bind),  # issue 15 item 5: the metrics page
            path("", wrap(self.changelist_view), name="django_bullq_bullqqueue_changelist"),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """Overview: every known queue with counts per state, paused flag, workers, latency."""
        return views.overview_view(self, request)
