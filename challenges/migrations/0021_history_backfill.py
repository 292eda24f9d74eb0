"""Back-fill the history records of switches made before records existed (issue 30).

What can be reconstructed: each rescore job that succeeded switched the challenge to its
version when it finished; each "make active again" left an audit event naming the
version (at once, or through the rescore job it names). Replayed in time order per
challenge, they give every such switch with the version it replaced (the first one
replaced version 1, or nothing when it is version 1 itself). A record is computed from
the two versions' kept entries as they are now (a version's entries stop changing when
it stops being active, but the active version's keep taking attempts), so counts and
ranks describe the boards as kept, not necessarily to the second of the switch. Such
records are marked ``backfilled``.

What cannot: batch runs (only the last run's time is kept, and the board before it is
gone), switches whose version was deleted, and a challenge's first version made active
at its creation (not a switch). Those get no record.
"""

from django.db import migrations


def _board(Entry, version_id):
    return list(
        Entry.objects.filter(version_id=version_id)
        .order_by("sort_key", "created_at", "attempt_id")
        .values_list("player_id", "sort_key", "created_at")
    )


def _named(Player, items):
    names = {
        pk: (external_id, name)
        for pk, external_id, name in Player.objects.filter(
            pk__in={i[0] for i in items}
        ).values_list("pk", "external_id", "display_name")
    }
    return [
        {
            "player_id": pk,
            "external_id": names[pk][0],
            "display_name": names[pk][1],
            "rank_before": before,
            "rank_after": after,
        }
        for pk, before, after in items
        if pk in names
    ]


def backfill(apps, schema_editor):
    from challenges.leaderboards.history import board_diff  # plain Python, no model

    Challenge = apps.get_model("challenges", "Challenge")
    Version = apps.get_model("challenges", "ScoringVersion")
    Job = apps.get_model("challenges", "RescoreJob")
    Audit = apps.get_model("challenges", "AuditEvent")
    Entry = apps.get_model("challenges", "LeaderboardEntry")
    Player = apps.get_model("challenges", "Player")
    Record = apps.get_model("challenges", "HistoryRecord")
    for challenge in Challenge.objects.filter(history__isnull=True).distinct():
        versions = {v.number: v for v in Version.objects.filter(challenge_id=challenge.pk)}
        by_id = {v.pk: v for v in versions.values()}
        rollback_jobs, switches = set(), []
        for event in Audit.objects.filter(challenge_id=challenge.pk, kind="version_activate"):
            after = event.after or {}
            if after.get("rescore_job"):
                rollback_jobs.add(after["rescore_job"])
            elif after.get("active_version") in versions:
                switches.append((event.at, versions[after["active_version"]], "rollback"))
        for job in Job.objects.filter(challenge_id=challenge.pk, status="succeeded"):
            if job.version_id in by_id and job.finished_at is not None:
                reason = "rollback" if job.pk in rollback_jobs else "rescore"
                switches.append((job.finished_at, by_id[job.version_id], reason))
        switches.sort(key=lambda s: (s[0], s[1].number))
        previous = versions.get(1)
        for at, version, reason in switches:
            if previous is not None and previous.pk == version.pk:
                continue  # version 1's own first scoring: not a switch
            before = _board(Entry, previous.pk) if previous else []
            diff = board_diff(before, _board(Entry, version.pk))
            Record.objects.create(
                challenge_id=challenge.pk,
                version_id=version.pk,
                previous_version_id=previous.pk if previous else None,
                switched_at=at,
                reason=reason,
                players_before=diff.players_before,
                players_after=diff.players_after,
                moved=diff.moved,
                entered_top=_named(Player, diff.entered_top),
                left_top=_named(Player, diff.left_top),
                largest_moves=_named(Player, diff.largest_moves),
                kendall_tau=diff.kendall_tau,
                backfilled=True,
            )
            previous = version


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0020_history_records"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
