"""The smallest Django project that runs the bench's ``@task`` functions through ``runworker``.

Its settings read the bench's Redis and queue from the environment (see ``settings.py``); the
``bullq-task*`` adapters set them before ``django.setup()``.
"""
