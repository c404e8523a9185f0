"""The worker side: what ``manage.py runworker`` runs to turn a job back into a function call.

``group.py`` builds one core :class:`~django_bullq.core.worker.Worker` per queue and runs them
together (``WorkerGroup``, ``run_workers``); ``dispatch.py`` is their processor: it finds the
task registered under the job's name and calls it (``process_job``, ``current_job``,
``rate_limit``); ``hygiene.py`` keeps Django's database connections clean around each job;
``supervisor.py`` runs and restarts worker processes, ``recycle.py`` decides when a process
retires, and ``process_pool.py`` runs ``@task(process=True)`` functions in a spawn pool.
"""
