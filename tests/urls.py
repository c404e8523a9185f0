from django.contrib import admin
from django.urls import path

from django_bullq.prometheus.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("bullq/metrics", metrics, name="bullq-metrics"),  # docs/observability.md
]
