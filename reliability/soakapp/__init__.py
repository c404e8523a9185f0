"""The soak's Django project: one task whose effect is recorded idempotently in a side Redis."""
