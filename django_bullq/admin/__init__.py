"""Django admin pages for BullMQ queues (see docs/admin.md); registers :class:`QueueAdmin`."""

from django.contrib import admin

from ..models import BullqQueue
from .options import QueueAdmin

admin.site.register(BullqQueue, QueueAdmin)

__all__ = ["QueueAdmin"]
