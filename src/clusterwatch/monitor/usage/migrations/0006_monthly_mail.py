# usage_monthly --mail: one outbox row per (month, account, coordinator).

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('usage', '0005_usage_alert'),
    ]

    operations = [
        migrations.CreateModel(
            name='MonthlyMail',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('month', models.CharField(max_length=7)),
                ('account', models.CharField(max_length=64)),
                ('user', models.CharField(max_length=64)),
                ('recipient', models.CharField(max_length=254)),
                ('state', models.CharField(choices=[('pending', 'pending'), ('sent', 'sent'), ('failed', 'failed')], default='pending', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('claimed_until', models.DateTimeField(blank=True, null=True)),
                ('claim', models.CharField(blank=True, max_length=32)),
                ('last_error', models.CharField(blank=True, max_length=300)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['month', 'state', 'next_attempt_at'], name='monthly_due')],
                'constraints': [models.UniqueConstraint(fields=('month', 'account', 'user'), name='monthly_once')],
            },
        ),
    ]
