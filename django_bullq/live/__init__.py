"""Live events: the queue's Redis event stream (BullMQ ``QueueEvents``) carried to browsers.

``bridge.py`` reads each queue's event stream once per process and fans the events out to
every open socket; ``consumers.py`` holds the Channels WebSocket consumers and the access rule
(``default_authorizer``). ``django_bullq.routing`` (kept at the top, users import it) maps the
URLs to these consumers.
"""
