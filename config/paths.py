"""The folders Podium writes under ``var/`` (the SQLite file, the embedded Celery broker,
collected static files). Settings only name them; they are made when the application
starts (``ChallengesConfig.ready``), never when settings are imported."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def var_dirs_create() -> None:
    folders = [Path(settings.VAR_DIR)]
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
    folders += [
        Path(options[key])
        for key in ("data_folder_in", "data_folder_out", "control_folder")
        if key in options
    ]
    if not settings.PRODUCTION:
        folders.append(Path(settings.STATIC_ROOT))  # WhiteNoise warns about a missing one
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
