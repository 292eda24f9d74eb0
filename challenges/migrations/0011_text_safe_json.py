"""JSON columns are read through TextSafeJSONDecoder (a surrogate stored by an older
version comes back as U+FFFD). The decoder is Python only: no database operation, so no
table is rebuilt on SQLite."""

from django.db import migrations, models

import challenges.text

DECODER = challenges.text.TextSafeJSONDecoder


def _alter(model_name: str, name: str, **kwargs) -> migrations.AlterField:
    return migrations.AlterField(
        model_name=model_name,
        name=name,
        field=models.JSONField(blank=True, decoder=DECODER, **kwargs),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0010_rescore_chunk_heartbeat"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                _alter("attempt", "messages", null=True),
                _alter("attempt", "sample", null=True),
                _alter("attemptscore", "details", null=True),
                _alter("challenge", "metrics", default=list),
                _alter("challenge", "scoring_config", default=dict),
                _alter("scoringversion", "metrics", default=list),
                _alter("scoringversion", "scoring_config", default=dict),
            ],
        )
    ]
