"""The unmanaged placeholder model that carries ``django_bullq.view_queue`` (no table)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="BullqQueue",
            fields=[("id", models.BigAutoField(auto_created=True, primary_key=True,
                                            serialize=False, verbose_name="ID"))],
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": [("view_queue", "Can view queues and follow their events")],
                "verbose_name": "queue",
            },
        ),
    ]
