"""The producer side: what a view calls to turn a call into a BullMQ job.

``task.py`` holds the ``@task`` decorator and :class:`~django_bullq.producer.task.Task`;
``registry.py`` the job name -> task table the worker dispatches through; ``transaction.py``
the on-commit rule (``submit``, ``defer``, ``Pending``); ``outbox.py`` the transactional outbox
that carries on-commit writes through a crash; ``schedules.py`` job schedulers (repeatable
jobs) declared in settings or from code; ``flows.py`` parent/child job trees. Everything here
ends in a Lua script of ``django_bullq.core``; nothing here runs a job.
"""
