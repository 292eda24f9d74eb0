"""``manage.py challenge_apply FILE.yaml``: create or update a challenge (by slug) from a
definition file (see challenges/transfer/definitions.py for the format)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from challenges.transfer.definitions import DefinitionInvalid, challenge_apply


class Command(BaseCommand):
    help = "Create or update a challenge from a YAML definition (matched by slug)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="The YAML definition; !include paths are relative to it.")

    def handle(self, *args, file: str, **options) -> None:
        try:
            result = challenge_apply(path=file)
        except DefinitionInvalid as exc:
            raise CommandError(str(exc)) from None
        challenge = result.challenge
        if result.created:
            self.stdout.write(f"Created challenge {challenge.slug!r} (scoring version 1).")
        elif not result.changed:
            self.stdout.write(f"Challenge {challenge.slug!r} is unchanged.")
        elif result.new_version is not None:
            job = f", rescore job {result.job.pk} queued" if result.job else ""
            self.stdout.write(
                f"Updated challenge {challenge.slug!r}: scoring version "
                f"{result.new_version.number}{job}."
            )
        else:
            self.stdout.write(f"Updated challenge {challenge.slug!r} (scoring unchanged).")
