"""`manage.py rescore <slug> [--wait] [--inline]`: queue a rescore of a challenge."""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from challenges.models import Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from config.celery import as_a_task

BAR_WIDTH = 30
NO_PROGRESS_HINT_S = 15


def progress_line(job: RescoreJob, started: float) -> str:
    total = max(job.total, 1)
    done = min(job.processed, total)
    filled = round(BAR_WIDTH * done / total)
    elapsed = max(time.monotonic() - started, 1e-6)
    rate = job.processed / elapsed
    eta = f"{(job.total - job.processed) / rate:,.0f}s" if rate > 0 and job.processed else "?"
    return (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {job.processed:,}/{job.total:,} "
        f"{rate:,.0f}/s ETA {eta} failures {job.failed:,} ({job.status})"
    )


class Command(BaseCommand):
    help = "Rescore every attempt of a challenge under its current setup (a new version)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--wait", action="store_true", help="show progress until done")
        parser.add_argument(
            "--inline", action="store_true", help="score in this process, without a worker"
        )

    def handle(self, *args, slug: str, wait: bool, inline: bool, **options):
        challenge = Challenge.objects.filter(slug=slug).first()
        if challenge is None:
            raise CommandError(f"No challenge with slug {slug!r}.")
        job = setup_services.challenge_rescore(challenge=challenge)
        self.stdout.write(
            f"Rescore job {job.pk}: version {job.version.number} of {challenge.slug}, "
            f"{job.total:,} attempts in {job.chunks_total} "
            f"chunk{'s' if job.chunks_total != 1 else ''}."
        )
        if inline:
            with as_a_task():  # the collector as a worker runs the job's chunks
                job = rescoring.job_run_inline(job=job)
            self.stdout.write(progress_line(job, time.monotonic()))
        elif wait:
            job = self._wait(job)
        else:
            return
        if job.status != RescoreJob.Status.SUCCEEDED:
            raise CommandError(f"Job {job.pk} ended {job.status}: {job.error}")
        self.stdout.write(self.style.SUCCESS(f"Version {job.version.number} is active."))

    def _wait(self, job: RescoreJob) -> RescoreJob:
        started = time.monotonic()
        hinted = False
        while True:
            job.refresh_from_db()
            sys.stdout.write("\r" + progress_line(job, started))
            sys.stdout.flush()
            if not job.is_active:
                sys.stdout.write("\n")
                return job
            stalled = job.status == RescoreJob.Status.QUEUED
            if stalled and not hinted and time.monotonic() - started > NO_PROGRESS_HINT_S:
                self.stderr.write(
                    "\nNo worker has picked the job up yet. Is one running? "
                    "(.venv/bin/celery -A config worker, or rerun with --inline)"
                )
                hinted = True
            time.sleep(0.5)
