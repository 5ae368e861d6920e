"""The harvester registry: the keys the monitor expects a record from."""

import django.core.validators
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("monitor", "0005_unfreeze_future_latest")]

    operations = [
        migrations.CreateModel(
            name="RegisteredHarvester",
            fields=[
                ("key", models.CharField(max_length=128, primary_key=True, serialize=False,
                                         validators=[django.core.validators.RegexValidator(
                                             "\\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\\Z",
                                             "letters, digits, '.', '_' and '-' only, "
                                             "starting with a letter or digit")])),
                ("remote", models.BooleanField(default=False)),
                ("registered_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("note", models.CharField(blank=True, max_length=200)),
            ],
        ),
    ]
