"""``manage.py import_challenge FILE [--slug NEW] [--queue]``: create a challenge from an
``export_challenge`` file, all or nothing, and score its active version."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from challenges.rescoring.jobs import job_run_inline
from challenges.transfer.jsonlines import ImportInvalid, challenge_import


class Command(BaseCommand):
    help = "Import a challenge exported by export_challenge (JSON lines; '-' reads stdin)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="The export file, or '-' for standard input.")
        parser.add_argument("--slug", help="Import under this slug (e.g. beside the original).")
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Leave the scoring of the active version to the Celery workers.",
        )

    def handle(self, *args, file: str, slug: str | None, queue: bool, **options) -> None:
        try:
            if file == "-":
                result = challenge_import(lines=sys.stdin, slug=slug)
            else:
                try:
                    handle = open(file, encoding="utf-8")
                except OSError as exc:
                    raise CommandError(f"Cannot read {file}: {exc.strerror}.") from None
                with handle:
                    result = challenge_import(lines=handle, slug=slug)
        except ImportInvalid as exc:
            raise CommandError(f"Nothing imported: {exc}") from None
        challenge = result.challenge
        self.stdout.write(
            f"Imported {challenge.slug!r}: {result.versions} version(s), "
            f"{result.attempts} attempt(s)."
        )
        if result.job is None:
            return
        if queue:
            self.stdout.write(f"Rescore job {result.job.pk} queued for the workers.")
            return
        job = job_run_inline(job=result.job)
        self.stdout.write(
            f"Scored under version {job.version.number}: {job.processed} attempt(s), "
            f"{job.failed} failure(s); job {job.status}."
        )
