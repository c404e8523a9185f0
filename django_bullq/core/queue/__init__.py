"""The queue (BullMQ's ``Queue``): :class:`~django_bullq.core.queue.queue.Queue`."""

from .queue import Queue

__all__ = ["Queue"]
