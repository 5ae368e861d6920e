"""The harvester registry keeps what the remote builder needs for a remote key."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("monitor", "0006_registered_harvester")]

    operations = [
        migrations.AddField(model_name="registeredharvester", name=name,
                            field=models.CharField(blank=True, max_length=length))
        for name, length in (("harvester_id", 50), ("queue_config", 500), ("iri_url", 500),
                             ("iri_resource", 200), ("iri_path", 500), ("iri_token_file", 500))
    ]
