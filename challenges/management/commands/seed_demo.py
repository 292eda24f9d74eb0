from django.core.management.base import BaseCommand

from challenges.models import Challenge
from challenges.transfer.demo import seed_demo


class Command(BaseCommand):
    help = "Create three demo challenges with a few hundred attempts (once)."

    def add_arguments(self, parser):
        parser.add_argument("--attempts", type=int, default=150, help="attempts per challenge")
        parser.add_argument(
            "--if-empty", action="store_true", help="only when the database has no challenge"
        )

    def handle(self, *args, attempts: int, if_empty: bool, **options):
        if if_empty and Challenge.objects.exists():
            return
        created = seed_demo(attempts_per_challenge=attempts)
        if not created:
            self.stdout.write("Demo challenges exist already; nothing to do.")
            return
        for challenge in created:
            self.stdout.write(f"Created /challenges/{challenge.slug}/")
