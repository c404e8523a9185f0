"""``make bench``: django_bullq side by side with PyPI bullmq, Node bullmq, RQ, Celery and Dramatiq.

Run ``python -m benchmarks --help``. See docs/benchmarks.md for the method and the last results.
"""
