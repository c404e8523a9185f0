"""Management commands of django_bullq."""
