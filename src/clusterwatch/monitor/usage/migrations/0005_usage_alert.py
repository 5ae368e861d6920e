# usage_watch's outbox: one row per (running job, broken rule), its email claimed before it is sent.

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('usage', '0004_api_token_in_kernel'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageAlert',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('jobid', models.CharField(max_length=32)),
                ('rule', models.CharField(max_length=32)),
                ('user', models.CharField(max_length=64)),
                ('account', models.CharField(blank=True, max_length=64)),
                ('partition', models.CharField(blank=True, max_length=64)),
                ('name', models.CharField(blank=True, max_length=200)),
                ('recipient', models.CharField(blank=True, max_length=254)),
                ('cpus', models.PositiveIntegerField(default=0)),
                ('gpus', models.PositiveIntegerField(default=0)),
                ('memory_bytes', models.BigIntegerField(null=True)),
                ('job_start', models.DateTimeField(null=True)),
                ('message', models.CharField(max_length=500)),
                ('advice', models.CharField(max_length=500)),
                ('figures', models.JSONField(default=dict)),
                ('state', models.CharField(choices=[('pending', 'pending'), ('sent', 'sent'), ('failed', 'failed')], default='pending', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('claimed_until', models.DateTimeField(blank=True, null=True)),
                ('claim', models.CharField(blank=True, max_length=32)),
                ('last_error', models.CharField(blank=True, max_length=300)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_seen_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['state', 'next_attempt_at'], name='alert_due')],
                'constraints': [models.UniqueConstraint(fields=('jobid', 'rule'), name='alert_once_per_job_rule')],
            },
        ),
    ]
