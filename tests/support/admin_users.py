"""Logged-in staff for the admin's tests, with exactly the django_bullq permissions named."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import Permission, User
from django.test import Client


def staff_user(*codenames: str, staff: bool = True, every: bool = False) -> User:
    """A new user (``is_staff`` = ``staff``) holding ``django_bullq.<codename>`` for each of
    ``codenames``; with ``every``, all of django_bullq's permissions; with neither, none."""
    user = User.objects.create_user(f"u{uuid.uuid4().hex[:8]}", password="pw", is_staff=staff)
    perms = Permission.objects.filter(content_type__app_label="django_bullq")
    user.user_permissions.set(perms if every else perms.filter(codename__in=codenames))
    return user


def staff_client(*codenames: str, staff: bool = True, every: bool = False) -> Client:
    """A test client logged in as :func:`staff_user` (same arguments)."""
    client = Client()
    client.force_login(staff_user(*codenames, staff=staff, every=every))
    return client


__all__ = ["staff_client", "staff_user"]
