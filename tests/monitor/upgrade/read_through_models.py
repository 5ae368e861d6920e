"""Every row of the monitor's database read through the current models, as JSON on stdout.

Run inside the monitor's own Django by the upgrade test (`clusterwatch monitor shell -c`, with
`runpy.run_path` of this file), so it reads the upgraded database with the installed code's
settings and models:

- `tables`: each table's row count, by SQL (what is there, whatever the models say);
- `models`: for each current model's table, its label, the rows the model read (every
  column of every row converted by the current fields and serialized, as `dumpdata` does:
  a column the model names but the table lacks, or a value it cannot read, fails the run),
  and whether Django made the model (a many-to-many table);
- `content_types`: `app_label.model` to the id, as django_content_type holds them;
- `vendor`: the database's kind (sqlite, postgresql).
"""

from __future__ import annotations

import json
from typing import Any


def main() -> None:
    from django.apps import apps
    from django.contrib.contenttypes.models import ContentType
    from django.core import serializers
    from django.db import connection

    tables: dict[str, int] = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            # The names are the database's own tables, quoted.
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608
            tables[table] = cursor.fetchone()[0]
    models: dict[str, dict[str, Any]] = {}
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if meta.proxy or not meta.managed:
            continue
        # Each field's value of each row, converted from the database and back to text.
        rows = json.loads(serializers.serialize("json", model._default_manager.all()))
        models[meta.db_table] = {"model": meta.label_lower, "rows": len(rows),
                                 "auto_created": bool(meta.auto_created)}
    content_types = {f"{kind.app_label}.{kind.model}": kind.pk
                     for kind in ContentType.objects.all()}
    print(json.dumps({"vendor": connection.vendor, "tables": tables, "models": models,
                      "content_types": content_types}))


if __name__ == "__main__":
    main()
