"""Leaderboard entries get (version, player) as their primary key: one index and a
sequence fewer to maintain when a rescore writes 100,000 entries. Entries are derived
data, so the table is recreated and its rows copied across."""

import django.db.models.deletion
from django.db import migrations, models

COLUMNS = "version_id, player_id, attempt_id, score, sort_key, created_at"


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0006_attempt_challenge_id_index"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="leaderboardentry", name="entry_rank"),
        migrations.RemoveConstraint(model_name="leaderboardentry", name="entry_version_player"),
        migrations.RenameModel("LeaderboardEntry", "LeaderboardEntryOld"),
        migrations.CreateModel(
            name="LeaderboardEntry",
            fields=[
                ("pk", models.CompositePrimaryKey("version", "player", blank=True, editable=False, primary_key=True, serialize=False)),
                ("score", models.FloatField()),
                ("sort_key", models.FloatField()),
                ("created_at", models.DateTimeField()),
                ("attempt", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="challenges.attempt")),
                ("player", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="challenges.player")),
                ("version", models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="entries", to="challenges.scoringversion")),
            ],
            options={
                "indexes": [models.Index(fields=["version", "sort_key", "created_at", "attempt"], name="entry_rank")],
            },
        ),
        migrations.RunSQL(
            f"INSERT INTO challenges_leaderboardentry ({COLUMNS}) "
            f"SELECT {COLUMNS} FROM challenges_leaderboardentryold",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.DeleteModel("LeaderboardEntryOld"),
    ]
