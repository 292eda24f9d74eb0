"""``manage.py export_challenge <slug> [-o FILE]``: a challenge, its scoring versions and
its attempts as JSON lines (see challenges/transfer/jsonlines.py for the format)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from challenges.models import Challenge
from challenges.transfer.jsonlines import export_lines


class Command(BaseCommand):
    help = "Export a challenge (setup, scoring versions, attempts) as JSON lines."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("-o", "--output", help="File to write (default: standard output).")

    def handle(self, *args, slug: str, output: str | None, **options) -> None:
        challenge = Challenge.objects.select_related("active_version").filter(slug=slug).first()
        if challenge is None:
            raise CommandError(f"No challenge with the slug {slug!r}.")
        if output in (None, "-"):
            sys.stdout.writelines(export_lines(challenge=challenge))
            return
        path = Path(output)
        partial = path.with_name(path.name + ".partial")
        count = 0
        with partial.open("w", encoding="utf-8") as out:
            for line in export_lines(challenge=challenge):
                out.write(line)
                count += 1
        partial.replace(path)  # never a half-written file under the final name
        self.stderr.write(f"Wrote {count} lines to {path}.")
