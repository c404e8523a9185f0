"""A small model for the Django-layer tests that touch the database."""

from django.db import models


class Note(models.Model):
    """One row written or read by test tasks; ``slug`` is unique to provoke IntegrityError."""

    slug = models.SlugField(unique=True)
    text = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return self.slug
