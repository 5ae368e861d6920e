"""The monitor's kernel: the Django app labelled `monitor` (models, admin, migrations) and
what every feature uses: who is asking (sessions, usage tokens, MUNGE), the view guard and
its refusals, time stamps and humanized figures, operators, secrets and prefixed settings.
It imports no feature but `record` (docs/architecture.md); its modules without Django
(`humanize`, `prefixed_settings`, `secrets`) are also read by `clusterwatch usage`.
"""
