"""Prometheus metrics of django_bullq's queues (docs/observability.md); needs the
``prometheus`` extra (``pip install 'django-bullq[prometheus]'``, ``prometheus_client``).

:mod:`.collector` (Django-free) reads Redis at scrape time and yields the families,
:mod:`.snapshot` is what it reads of one queue, :mod:`.buckets` the histograms' bounds;
:mod:`.exposition` renders every known queue for :mod:`.views` (the view to mount in
``urls.py``) and ``manage.py bullq metrics``.
"""
