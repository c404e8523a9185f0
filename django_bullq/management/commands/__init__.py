"""``manage.py runworker``."""
