"""The `operators` group: its members read the operators' pages (monitor/core/operators.py), so
the admin offers it from the start."""

from django.db import migrations

GROUP = "operators"  # clusterwatch.monitor.core.operators.GROUP, kept here as migrations freeze


def make_group(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("auth", "Group").objects.get_or_create(name=GROUP)


class Migration(migrations.Migration):
    dependencies = [
        ("monitor", "0007_registered_harvester_builder"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    # Going back leaves the group: its members may have been added by hand.
    operations = [migrations.RunPython(make_group, migrations.RunPython.noop)]
