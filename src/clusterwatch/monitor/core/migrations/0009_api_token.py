# The API token model moves from the usage app into the kernel: state only. The table
# (usage_usageapitoken) was made by usage's 0001_initial and keeps its name and its rows;
# usage's 0004 then leaves a proxy of it for the admin.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("monitor", "0008_operators_group"),
        ("usage", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                                   serialize=False, verbose_name="ID")),
                        ("prefix", models.CharField(max_length=16, unique=True)),
                        ("digest", models.CharField(max_length=64)),
                        ("note", models.CharField(blank=True, max_length=200)),
                        ("created_at", models.DateTimeField(
                            default=django.utils.timezone.now)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("user", models.ForeignKey(
                            on_delete=django.db.models.deletion.CASCADE,
                            related_name="api_tokens", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "usage_usageapitoken"},
                ),
            ],
        ),
    ]
