"""System checks: a registered plugin that cannot load is reported at start-up as a
*warning* (``manage.py check``, ``migrate``, ``runserver`` go on): one broken plugin
never takes the site down. It is listed as broken with its error in the admin and in
``GET /api/scorers/``; challenges that use it record null scores with the reason, and
choosing it for a challenge is refused."""

from __future__ import annotations

from django.core import checks

from scoring.engine.protocol import RegistryError


@checks.register()
def scorer_plugins_load(app_configs: object, **kwargs: object) -> list[checks.CheckMessage]:
    from scoring.project_registry import registry

    try:
        reg = registry()
    except RegistryError as exc:  # a registry that cannot be built at all
        return [checks.Warning(str(exc), id="podium.W001")]
    problems = [
        checks.Warning(
            f"Scorer plugin {plugin_id!r} ({entrypoint!r}) is not registered: {why}",
            hint="Fix the SCORING_PLUGINS setting or the package's podium.scorers entry point.",
            id="podium.W002",
        )
        for plugin_id, (entrypoint, why) in reg.refused().items()
    ]
    for plugin_id in reg.ids():
        why = reg.problem(plugin_id)
        if why:
            problems.append(
                checks.Warning(
                    f"Scorer plugin {plugin_id!r} is broken and will not score: {why}",
                    hint="Challenges using it record null scores with this error until "
                    "it loads; `manage.py scorer_check " + plugin_id + "` shows the cause.",
                    id="podium.W002",
                )
            )
    return problems
