"""Python challenges saved before issue 20 keep scoring the same: the migration marks
them (and their versions) ``sample_with_metrics``; others are left alone."""

from __future__ import annotations

import importlib

from django.apps import apps

from challenges.models import Challenge, ScoringVersion

migration = importlib.import_module("challenges.migrations.0013_snippet_contract")


def test_existing_python_challenges_keep_the_metrics_in_their_sample(db):
    python = Challenge.objects.create(
        name="Old snippet", slug="old", scoring_strategy="python", scoring_code="x"
    )
    other = Challenge.objects.create(name="Plugin", slug="plugin", scoring_strategy="custom")
    for challenge in (python, other):
        ScoringVersion.objects.create(challenge=challenge, number=1, **challenge.setup_dict())

    migration.keep_metrics_in_sample(apps, None)

    assert Challenge.objects.get(pk=python.pk).sample_with_metrics is True
    assert ScoringVersion.objects.get(challenge=python).sample_with_metrics is True
    assert Challenge.objects.get(pk=other.pk).sample_with_metrics is False
    assert ScoringVersion.objects.get(challenge=other).sample_with_metrics is False
