# The plots a kept job has, listed when it is kept (the job page's queries: 19 -> 1).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("usage", "0002_usage_mail"),
    ]

    operations = [
        migrations.AddField(
            model_name="keptsummary",
            name="plot_metrics",
            field=models.JSONField(null=True),
        ),
    ]
