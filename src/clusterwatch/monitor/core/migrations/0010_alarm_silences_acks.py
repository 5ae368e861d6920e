# Issue 21: silences and acknowledgements of the monitor's alarms. Alarm gains whether its
# incident's alert is held back (alert_held, false for every incident of the previous
# release: their alerts were appended) and its acknowledgement (by, at, comment: empty for
# the previous release's incidents); a new table holds the silences.

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("monitor", "0009_api_token"),
    ]

    operations = [
        migrations.AddField(
            model_name="alarm",
            name="alert_held",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="alarm",
            name="acknowledged_by",
            field=models.CharField(blank=True, default="", max_length=150),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="alarm",
            name="acknowledged_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="alarm",
            name="ack_comment",
            field=models.TextField(blank=True, default=""),
            preserve_default=False,
        ),
        migrations.CreateModel(
            name="AlarmSilence",
            fields=[
                ("id", models.CharField(max_length=12, primary_key=True, serialize=False)),
                ("matchers", models.JSONField(default=list)),
                ("starts_at", models.DateTimeField()),
                ("ends_at", models.DateTimeField()),
                ("author", models.CharField(max_length=150)),
                ("comment", models.TextField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("expired_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
