"""``GET /api/scorers/``: the scorer catalogue (docs/scorers.md, "Class scorer plugins").

Authenticated users (integrators, admins) discover the strategies and the registered
plugins: id, name, description, entrypoint and aliases, config schema with defaults,
whether it runs isolated, and its status (``ok``, or ``broken`` with the error: staff and
admins read why; an integration token reads only that it is broken, since the error of
an import can name the server's paths)."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from challenges.permissions import is_staff_member
from scoring.catalogue import scorer_catalogue

HIDDEN_ERROR = "This plugin cannot be loaded; staff and admins can see why."


class StrategySerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class PluginSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The scoring_plugin_id a challenge names.")
    name = serializers.CharField()
    description = serializers.CharField()
    entrypoint = serializers.CharField(help_text="The registered 'module:Class'.")
    aliases = serializers.ListField(
        child=serializers.CharField(), help_text="Other entrypoint spellings accepted."
    )
    config_schema = serializers.JSONField(allow_null=True, help_text="JSON Schema, or null.")
    config_defaults = serializers.DictField(help_text="The schema's defaults.")
    isolated = serializers.BooleanField(
        allow_null=True, help_text="Runs in a separate scorer process (null when broken)."
    )
    status = serializers.ChoiceField(choices=["ok", "broken"])
    error = serializers.CharField(allow_blank=True, help_text="Why it is broken ('' if ok).")


class CatalogueSerializer(serializers.Serializer):
    strategies = StrategySerializer(many=True)
    plugins = PluginSerializer(many=True)


class ScorerCatalogueView(APIView):
    """The scoring strategies and registered scorer plugins (authenticated users)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: CatalogueSerializer}, operation_id="scorers_list")
    def get(self, request: Request) -> Response:
        catalogue = scorer_catalogue()
        data = {
            "strategies": [
                {"id": e.id, "name": e.name, "description": e.description}
                for e in catalogue["strategies"]
            ],
            "plugins": [
                {k: v for k, v in asdict(e).items() if k != "kind"} for e in catalogue["plugins"]
            ],
        }
        if not is_staff_member(request.user):
            for plugin in data["plugins"]:
                if plugin["error"]:
                    plugin["error"] = HIDDEN_ERROR
        return Response(CatalogueSerializer(data).data)
