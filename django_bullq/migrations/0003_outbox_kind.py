from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_bullq', '0002_outbox'),
    ]

    operations = [
        migrations.AddField(
            model_name='outboxjob',
            name='kind',
            field=models.CharField(choices=[('job', 'job'), ('flow', 'flow'), ('scheduler', 'job scheduler')], default='job', max_length=16),
        ),
    ]
