"""URLs of the example project: the Django admin, where the weather models and queues show."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
