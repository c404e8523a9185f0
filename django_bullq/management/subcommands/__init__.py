"""The subcommands of ``manage.py bullq``: ``health`` (worker heartbeats and queue counts) and
``capacity`` (a load probe). ``management/commands/bullq.py`` imports them by name.
"""
