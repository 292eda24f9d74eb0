from django.apps import AppConfig


class ChallengesConfig(AppConfig):
    name = "challenges"
    verbose_name = "Challenges"

    def ready(self) -> None:
        # The public ranking's receivers: deletions mark checkpoints stale.
        from . import ranking  # noqa: F401
