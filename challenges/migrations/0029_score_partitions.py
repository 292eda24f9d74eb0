"""Score rows partitioned by version on PostgreSQL (list partitions, one per version), so
that a superseded version's scores go with a DROP of its partition, not a DELETE of its
rows (challenges/leaderboards/partitions.py). SQLite keeps one plain table.

Django's model state is unchanged (``id`` stays the primary key for the ORM); in the
database the primary key is (id, version_id), since a partitioned table's keys must hold
its partition key, and ``id`` takes its values from a sequence the table owns (identity
columns on a partitioned table need PostgreSQL 17). The table has no foreign keys in the
database: attaching or dropping a partition would otherwise lock the attempts and
versions tables; the ORM still cascades deletions (``on_delete``), and a partition is
made only for an existing version.

Cost on an existing database: every score row is copied once into its partition (one
INSERT … SELECT, then the indexes per partition) while the table is locked; plan the
upgrade's downtime for it (docs/deploy.md, "Upgrades").
"""

from django.db import migrations

T = "challenges_attemptscore"
OLD = "challenges_attemptscore_unpartitioned"
COLUMNS = (
    "id, score, sort_key, details, error, attempt_id, version_id, created_at, player_id, qa, "
    "qa_failed"
)

FORWARD = [
    f"ALTER TABLE {T} RENAME TO {OLD}",
    f"ALTER TABLE {OLD} RENAME CONSTRAINT {T}_pkey TO {OLD}_pkey",
    f"ALTER TABLE {OLD} RENAME CONSTRAINT score_version_attempt TO {OLD}_version_attempt",
    f"ALTER INDEX score_failed RENAME TO {OLD}_failed",
    f"ALTER INDEX {T}_attempt_id_532d1d58 RENAME TO {OLD}_attempt",
    f"ALTER TABLE {OLD} ALTER COLUMN id DROP IDENTITY IF EXISTS",
    f"CREATE SEQUENCE {T}_id_seq",
    f"""CREATE TABLE {T} (
    id bigint NOT NULL DEFAULT nextval('{T}_id_seq'),
    score double precision,
    sort_key double precision,
    details jsonb,
    error text NOT NULL,
    attempt_id bigint NOT NULL,
    version_id bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    player_id bigint NOT NULL,
    qa jsonb,
    qa_failed smallint DEFAULT 0 NOT NULL,
    CONSTRAINT {T}_qa_failed_check CHECK (qa_failed >= 0),
    CONSTRAINT score_and_sort_key_together CHECK (
        (score IS NULL AND sort_key IS NULL) OR (score IS NOT NULL AND sort_key IS NOT NULL)),
    CONSTRAINT {T}_pkey PRIMARY KEY (id, version_id),
    CONSTRAINT score_version_attempt UNIQUE (version_id, attempt_id)
) PARTITION BY LIST (version_id)""",
    f"ALTER SEQUENCE {T}_id_seq OWNED BY {T}.id",
    f"CREATE INDEX {T}_attempt_id_532d1d58 ON {T} (attempt_id)",
    f"CREATE INDEX score_failed ON {T} (version_id) WHERE NOT (error = '')",
    # One partition per existing version (versions made from now on get theirs when made).
    f"""DO $$
DECLARE v bigint;
BEGIN
    FOR v IN SELECT id FROM challenges_scoringversion ORDER BY id LOOP
        EXECUTE 'CREATE TABLE {T}_v' || v || ' PARTITION OF {T} FOR VALUES IN (' || v || ')';
    END LOOP;
END $$""",
    # Rows of versions that no longer exist (none: the foreign key held) are not copied.
    f"INSERT INTO {T} ({COLUMNS}) SELECT {COLUMNS} FROM {OLD} s"
    " WHERE EXISTS (SELECT 1 FROM challenges_scoringversion v WHERE v.id = s.version_id)",
    f"SELECT setval('{T}_id_seq', COALESCE((SELECT max(id) FROM {OLD}), 0) + 1, false)",
    f"DROP TABLE {OLD}",
    f"ANALYZE {T}",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite: one plain table, as before
    for statement in FORWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0028_player_renames"),
    ]

    # Irreversible on PostgreSQL: going back would copy every row again, the other way.
    operations = [migrations.RunPython(forward, migrations.RunPython.noop, elidable=False)]
