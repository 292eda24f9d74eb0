"""One-letter name searches on PostgreSQL: a GIN index over the letters of each display
name (upper case), so ``?q=x`` for a rare letter reads the few players who have one
instead of every player (a trigram index cannot serve a pattern shorter than three
characters). SQLite needs none at its scale."""

from django.db import migrations

LETTERS_INDEX = (
    "CREATE INDEX IF NOT EXISTS player_name_letters ON challenges_player "
    "USING gin (regexp_split_to_array(UPPER(display_name::text), ''))"
)


def _letters_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LETTERS_INDEX)


def _drop_letters_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS player_name_letters")


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0014_idempotency_record"),
    ]

    operations = [migrations.RunPython(_letters_index, _drop_letters_index)]
