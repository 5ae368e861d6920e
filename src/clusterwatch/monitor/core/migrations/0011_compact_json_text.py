# Issue 23: ingest's JSON columns (a record, its summary, its queues' slices) are written by
# orjson as compact text (core/json_text.py). Only the fields' encoder changes, which no
# database sees, so the change is the models' state alone: an AlterField would make SQLite
# copy every table whole (hundreds of MB of records) for nothing. Rows written before keep
# their text; both decode to the same values.

import clusterwatch.monitor.core.json_text
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitor', '0010_alarm_silences_acks'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='hostreport',
                    name='record',
                    field=models.JSONField(
                        encoder=clusterwatch.monitor.core.json_text.CompactJSONEncoder),
                ),
                migrations.AlterField(
                    model_name='latestqueue',
                    name='page_slice',
                    field=models.JSONField(
                        blank=True, null=True,
                        encoder=clusterwatch.monitor.core.json_text.CompactJSONEncoder),
                ),
                migrations.AlterField(
                    model_name='latestreport',
                    name='summary',
                    field=models.JSONField(
                        blank=True, null=True,
                        encoder=clusterwatch.monitor.core.json_text.CompactJSONEncoder),
                ),
            ],
        ),
    ]
