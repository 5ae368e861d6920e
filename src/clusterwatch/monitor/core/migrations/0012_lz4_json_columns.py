# Issue 23: on PostgreSQL, ingest's three large JSON columns (a 200 KB record, its summary,
# its queues' slices) are compressed with lz4 instead of pglz, PostgreSQL's default for
# values stored out of line (TOAST): the server's CPU for a post fell from 9.1 to 6.9 ms
# (in-process, medians of three, benchmarks/README.md), its stored size grew 1.6 %. Only
# values written from now on are compressed with lz4; older ones stay pglz, and both read
# back the same. SQLite, and a PostgreSQL built without lz4 (SET COMPRESSION would fail),
# keep what they have. No model changes: compression is the column's storage, not its type.
# pg_dump writes the columns' SET COMPRESSION lz4, which a server without lz4 refuses on
# restore (docs/monitor.md). A later ALTER COLUMN ... TYPE of these columns resets their
# compression to the server's default: such a migration must set lz4 again.
#
# SET COMPRESSION takes the table's ACCESS EXCLUSIVE lock. Behind an ALTER that waits for a
# transaction of another app host, every ingest and page of the table would wait too, for
# as long as that transaction lasts: so the ALTER waits at most LOCK_WAIT, and then the
# migration fails (nothing changed) with a message to run it again.

from django.db import OperationalError, migrations

COLUMNS = (("hostreport", "record"), ("latestreport", "summary"),
           ("latestqueue", "page_slice"))
LOCK_WAIT = "5s"
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that ran out


def _set_compression(method):
    def run(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                           "WHERE name = 'default_toast_compression'")
            row = cursor.fetchone()
            if not (row and row[0]):
                return
            # for the rest of the migration's transaction only
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
            for model_name, field_name in COLUMNS:
                model = apps.get_model("monitor", model_name)
                table = model._meta.db_table
                column = model._meta.get_field(field_name).column
                try:
                    cursor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} "
                                   f"ALTER COLUMN {schema_editor.quote_name(column)} "
                                   f"SET COMPRESSION {method}")
                except OperationalError as error:
                    if getattr(error.__cause__, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                        raise
                    raise OperationalError(
                        f"{table}: another transaction held the table for more than "
                        f"{LOCK_WAIT} (a long request or an open session on another host), "
                        f"so the migration changed nothing; run migrate again") from error
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('monitor', '0011_compact_json_text'),
    ]

    operations = [
        # Reversed, the columns follow the server's default_toast_compression again.
        migrations.RunPython(_set_compression("lz4"), _set_compression("DEFAULT"),
                             elidable=False),
    ]
