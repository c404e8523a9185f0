"""The django_bullq example project: Seattle weather, imported and reported by BullMQ jobs."""
