"""``manage.py challenge_dump SLUG DIR``: write a challenge's definition (YAML) and one
``.py`` file per snippet into DIR; ``challenge_apply DIR/SLUG.yaml`` reads it back."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from challenges.models import Challenge
from challenges.transfer.definitions import challenge_dump


class Command(BaseCommand):
    help = "Write a challenge's definition and its snippet files into a folder."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("directory")

    def handle(self, *args, slug: str, directory: str, **options) -> None:
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None:
            raise CommandError(f"No challenge with the slug {slug!r}.")
        try:
            written = challenge_dump(challenge=challenge, directory=directory)
        except OSError as exc:
            raise CommandError(f"Cannot write to {directory}: {exc.strerror}") from None
        for path in written:
            self.stdout.write(str(path))
