from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system checks
        from .engine import legacy

        legacy.install()  # `from services.challenge_scorer_protocol import ...` works
