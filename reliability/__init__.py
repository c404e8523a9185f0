"""Reliability tooling: the chaos soak (``make soak``, ``python -m reliability.soak``)."""
