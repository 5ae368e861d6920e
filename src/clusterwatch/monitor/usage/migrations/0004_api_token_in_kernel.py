# The API token model is the kernel's now (monitor 0009, same table): the usage app forgets
# its own in state only, and keeps a proxy so the admin's address and permissions stay.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("usage", "0003_kept_plot_metrics"),
        ("monitor", "0009_api_token"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="UsageApiToken")],
        ),
        migrations.CreateModel(
            name="UsageApiToken",
            fields=[],
            options={"proxy": True, "indexes": [], "constraints": []},
            bases=("monitor.apitoken",),
        ),
    ]
