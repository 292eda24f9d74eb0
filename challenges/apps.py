from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ChallengesConfig(AppConfig):
    name = "challenges"
    verbose_name = "Challenges"

    def ready(self) -> None:
        from config.paths import var_dirs_create

        var_dirs_create()
        # The Celery tasks, registered by name for challenges.enqueue; their receivers
        # look at touched boards and fan new events out to webhooks.
        from challenges import tasks  # noqa: F401

        # The public ranking's receivers: deletions mark checkpoints stale. The score
        # partitions' (PostgreSQL): a version's partition is made with the version.
        from challenges.leaderboards import partitions, ranking  # noqa: F401

        # After every migrate: the statements whose plans the database keeps (sql.py).
        post_migrate.connect(_plans_install, sender=self, dispatch_uid="podium-kept-plans")

        # Red/blue: hides and deleted pairings change the kept standings' generation.
        from challenges.redblue import standings_cache  # noqa: F401


def _plans_install(sender: object, *, using: str, **kwargs: object) -> None:
    from django.db import connections

    from challenges.leaderboards import sql

    sql.plans_install(connections[using])
