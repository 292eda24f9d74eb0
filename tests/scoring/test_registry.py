"""The scorer plugin registry: only registered ids and their own entrypoints run."""

from __future__ import annotations

import importlib
import sys
import types
from types import SimpleNamespace

import pytest

from scoring.engine import registry as registry_module
from scoring.engine.protocol import RegistryError
from scoring.engine.registry import (
    ENTRY_POINT_GROUP,
    WEIGHTED_ENTRYPOINT,
    WEIGHTED_ID,
    WEIGHTED_LEGACY_ENTRYPOINT,
    ScorerRegistry,
    builtin_registry,
)
from scoring.engine.runner import ScoringSetup, build_scorer
from scoring.scorers.weighted import WeightedScorer
from tests import plugins


@pytest.fixture
def registry() -> ScorerRegistry:
    return builtin_registry()


# -- unknown ids ---------------------------------------------------------------------
@pytest.mark.parametrize("plugin_id", ["nope", "", "builtin.weighted", "BUILTIN.WEIGHTED_SCORER"])
@pytest.mark.parametrize("method", ["entrypoint_for", "load", "info"])
def test_unknown_plugin_id_refused(registry, method, plugin_id):
    with pytest.raises(RegistryError, match="Unknown scorer plugin"):
        getattr(registry, method)(plugin_id)


@pytest.mark.parametrize("entrypoint", ["", None, WEIGHTED_ENTRYPOINT])
def test_verify_unknown_id_refused_whatever_the_entrypoint(registry, entrypoint):
    with pytest.raises(RegistryError) as info:
        registry.verify("someone.else", entrypoint)
    assert "someone.else" in str(info.value)


def test_build_scorer_refuses_unknown_plugin(registry):
    with pytest.raises(RegistryError):
        build_scorer(ScoringSetup(strategy="custom", plugin_id="nope"), registry)
    with pytest.raises(RegistryError):
        build_scorer(ScoringSetup(strategy="custom"), registry)  # no plugin id at all


def test_builtin_registry_holds_only_weighted(registry):
    assert registry.ids() == [WEIGHTED_ID]
    assert registry.entrypoint_for(WEIGHTED_ID) == WEIGHTED_ENTRYPOINT


# -- verify ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "entrypoint",
    [
        "os:system",
        "builtins:eval",
        "nope.nothing:Thing",
        "tests.plugins:Constant",  # importable scorer class, but not this id's
        "scoring.scorers.weighted:Weighted",
        "scoring.scorers.weighted:WeightedScorer ",
        "scoring.scorers.weighted.WeightedScorer",
        "Scoring.scorers.weighted:WeightedScorer",
        "services.scorers.weighted:WeightedScorerX",
    ],
)
def test_verify_refuses_mismatched_entrypoint(registry, entrypoint):
    with pytest.raises(RegistryError) as info:
        registry.verify(WEIGHTED_ID, entrypoint)
    assert WEIGHTED_ID in str(info.value)
    assert WEIGHTED_ENTRYPOINT in str(info.value)  # says what is expected


@pytest.mark.parametrize("entrypoint", [WEIGHTED_ENTRYPOINT, WEIGHTED_LEGACY_ENTRYPOINT, "", None])
def test_verify_returns_canonical_entrypoint(registry, entrypoint):
    assert registry.verify(WEIGHTED_ID, entrypoint) == WEIGHTED_ENTRYPOINT


def test_alias_of_one_plugin_not_accepted_for_another(registry):
    registry.register("t.const", "tests.plugins:Constant")
    with pytest.raises(RegistryError):
        registry.verify("t.const", WEIGHTED_LEGACY_ENTRYPOINT)
    with pytest.raises(RegistryError):
        registry.verify("t.const", WEIGHTED_ENTRYPOINT)
    with pytest.raises(RegistryError):
        registry.verify(WEIGHTED_ID, "tests.plugins:Constant")
    assert registry.verify("t.const", "tests.plugins:Constant") == "tests.plugins:Constant"


class _ImportSpy:
    """A meta-path finder that records every import of the module names it watches."""

    def __init__(self, names):
        self.names = set(names)
        self.seen: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            self.seen.append(fullname)
        return None


def test_verify_never_imports_the_given_string(registry, monkeypatch):
    for name in [n for n in sys.modules if n == "services" or n.startswith("services.")]:
        monkeypatch.delitem(sys.modules, name)  # a ported plugin loaded earlier imported it
    spy = _ImportSpy({"podium_spy_mod", "nope"})
    monkeypatch.setattr(sys, "meta_path", [spy, *sys.meta_path])
    calls: list[str] = []
    real_import = importlib.import_module
    monkeypatch.setattr(
        registry_module.importlib,
        "import_module",
        lambda name, *a: calls.append(name) or real_import(name, *a),
    )
    for entrypoint in ["podium_spy_mod:Thing", "nope.nothing:Thing", "os:system"]:
        with pytest.raises(RegistryError):
            registry.verify(WEIGHTED_ID, entrypoint)
    assert registry.verify(WEIGHTED_ID, WEIGHTED_LEGACY_ENTRYPOINT) == WEIGHTED_ENTRYPOINT
    assert spy.seen == []
    assert calls == []
    assert "podium_spy_mod" not in sys.modules
    assert "services" not in sys.modules  # the legacy alias is never imported either


def test_verify_does_not_load_a_module_planted_in_sys_modules(registry, monkeypatch):
    touched: list[str] = []

    class Planted(types.ModuleType):
        def __getattr__(self, name):
            touched.append(name)
            raise AttributeError(name)

    monkeypatch.setitem(sys.modules, "podium_planted", Planted("podium_planted"))
    with pytest.raises(RegistryError):
        registry.verify(WEIGHTED_ID, "podium_planted:Scorer")
    assert touched == []


def test_build_scorer_never_runs_the_setup_entrypoint(registry):
    # The setup (a database row) names another importable scorer for the weighted id:
    # either refused, or the registered weighted scorer runs; never Constant.
    from scoring.engine.protocol import AttemptMetrics, ScoringContext

    setup = ScoringSetup(
        strategy="custom", plugin_id=WEIGHTED_ID, entrypoint="tests.plugins:Constant"
    )
    try:
        scorer = build_scorer(setup, registry)
    except RegistryError:
        return
    [outcome] = scorer.score_many([(AttemptMetrics(succeeded=True), ScoringContext())])
    assert outcome.score == 100.0
    assert outcome.details["base"] == 100.0


# -- registration ----------------------------------------------------------------------
def test_re_register_with_other_entrypoint_refused(registry):
    with pytest.raises(RegistryError, match="already registered"):
        registry.register(WEIGHTED_ID, "tests.plugins:Constant")
    assert registry.entrypoint_for(WEIGHTED_ID) == WEIGHTED_ENTRYPOINT
    assert registry.load(WEIGHTED_ID) is WeightedScorer

    registry.register("t.a", "tests.plugins:Constant")
    with pytest.raises(RegistryError):
        registry.register("t.a", "tests.plugins:Printer")
    assert registry.entrypoint_for("t.a") == "tests.plugins:Constant"


def test_re_register_same_entrypoint_is_idempotent(registry):
    registry.register("t.a", "tests.plugins:Constant")
    registry.register("t.a", "tests.plugins:Constant")
    registry.register(WEIGHTED_ID, WEIGHTED_ENTRYPOINT)
    assert registry.ids() == sorted([WEIGHTED_ID, "t.a"])
    # Re-registering the built-in (e.g. listed again in SCORING_PLUGINS) keeps its alias.
    assert registry.verify(WEIGHTED_ID, WEIGHTED_LEGACY_ENTRYPOINT) == WEIGHTED_ENTRYPOINT
    assert registry.info(WEIGHTED_ID).runs_in_process is True


@pytest.mark.parametrize(
    "entrypoint",
    ["", "os", "os:", ":system", "os:sys tem", "a-b:C", "1mod:C", "os::system", "os:system()"],
)
def test_malformed_entrypoint_refused_at_registration(registry, entrypoint):
    with pytest.raises(RegistryError):
        registry.register("t.bad", entrypoint)
    assert "t.bad" not in registry.ids()


@pytest.mark.parametrize("plugin_id", ["", None, 3])
def test_bad_plugin_id_refused(registry, plugin_id):
    with pytest.raises(RegistryError):
        registry.register(plugin_id, "tests.plugins:Constant")


def test_register_mapping(registry):
    registry.register_mapping(
        {"acme.const": "tests.plugins:Constant", "acme.tokens": "tests.plugins:TokensScorer"}
    )
    assert registry.ids() == sorted([WEIGHTED_ID, "acme.const", "acme.tokens"])
    assert registry.verify("acme.const", "") == "tests.plugins:Constant"
    assert registry.load("acme.tokens") is plugins.TokensScorer
    assert registry.info("acme.const").runs_in_process is False


def test_register_mapping_cannot_hijack_a_builtin(registry):
    # Refused and noted (a warning at start-up), never raised: the site still starts.
    registry.register_mapping({WEIGHTED_ID: "tests.plugins:Constant"})
    assert registry.entrypoint_for(WEIGHTED_ID) == WEIGHTED_ENTRYPOINT
    assert registry.load(WEIGHTED_ID).__name__ == "WeightedScorer"
    [(entrypoint, why)] = registry.refused().values()
    assert entrypoint == "tests.plugins:Constant" and "refusing" in why
    with pytest.raises(RegistryError):
        registry.register(WEIGHTED_ID, "tests.plugins:Constant")  # directly: an error


def test_register_entry_points(registry, monkeypatch):
    asked: list[str] = []

    def fake_entry_points(*, group):
        asked.append(group)
        return [
            SimpleNamespace(name="acme.const", value="tests.plugins:Constant"),
            SimpleNamespace(name="acme.print", value="tests.plugins : Printer"),
        ]

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    registry.register_entry_points()
    assert asked == [ENTRY_POINT_GROUP] == ["podium.scorers"]
    assert registry.ids() == sorted([WEIGHTED_ID, "acme.const", "acme.print"])
    assert registry.entrypoint_for("acme.print") == "tests.plugins:Printer"
    assert registry.load("acme.const") is plugins.Constant
    assert registry.info("acme.const").runs_in_process is False


def test_register_entry_points_cannot_hijack_a_builtin(registry, monkeypatch):
    monkeypatch.setattr(
        registry_module,
        "entry_points",
        lambda *, group: [SimpleNamespace(name=WEIGHTED_ID, value="tests.plugins:Constant")],
    )
    registry.register_entry_points()  # refused and noted, never raised (issue 20)
    assert registry.entrypoint_for(WEIGHTED_ID) == WEIGHTED_ENTRYPOINT
    assert [e for e, _ in registry.refused().values()] == ["tests.plugins:Constant"]


# -- temporarily -----------------------------------------------------------------------
def test_temporarily_new_id_is_removed_afterwards(registry):
    with registry.temporarily("t.tmp", "tests.plugins:Constant"):
        assert registry.load("t.tmp") is plugins.Constant
        assert registry.ids() == sorted([WEIGHTED_ID, "t.tmp"])
    assert registry.ids() == [WEIGHTED_ID]
    with pytest.raises(RegistryError):
        registry.load("t.tmp")


def test_temporarily_restores_entrypoint_and_aliases(registry):
    registry.register("t.a", "tests.plugins:Constant", aliases=("old.place:Constant",))
    registry.load("t.a")
    with registry.temporarily("t.a", "tests.plugins:Printer"):
        assert registry.entrypoint_for("t.a") == "tests.plugins:Printer"
        assert registry.load("t.a") is plugins.Printer
        with pytest.raises(RegistryError):  # the old alias does not apply meanwhile
            registry.verify("t.a", "old.place:Constant")
    assert registry.entrypoint_for("t.a") == "tests.plugins:Constant"
    assert registry.load("t.a") is plugins.Constant
    assert registry.verify("t.a", "old.place:Constant") == "tests.plugins:Constant"


def test_temporarily_restores_even_on_error(registry):
    with pytest.raises(KeyError), registry.temporarily(WEIGHTED_ID, "tests.plugins:Constant"):
        assert registry.load(WEIGHTED_ID) is plugins.Constant
        raise KeyError("boom")
    assert registry.entrypoint_for(WEIGHTED_ID) == WEIGHTED_ENTRYPOINT
    assert registry.load(WEIGHTED_ID) is WeightedScorer
    assert registry.verify(WEIGHTED_ID, WEIGHTED_LEGACY_ENTRYPOINT) == WEIGHTED_ENTRYPOINT


def test_temporarily_replacement_of_builtin_is_not_builtin(registry):
    registry.register("t.pid", "tests.plugins:ReportsPid", builtin=True)
    assert registry.info("t.pid").runs_in_process is True
    with registry.temporarily("t.pid", "tests.plugins:ReportsPid"):
        assert registry.info("t.pid").runs_in_process is False


def test_temporarily_restores_builtin_flag(registry):
    assert registry.info(WEIGHTED_ID).runs_in_process is True
    with registry.temporarily(WEIGHTED_ID, "tests.plugins:Constant"):
        pass
    assert registry.info(WEIGHTED_ID).runs_in_process is True


# -- load ------------------------------------------------------------------------------
def test_load_caches(registry, monkeypatch):
    calls: list[str] = []
    real = registry_module.import_entrypoint

    def counting(entrypoint):
        calls.append(entrypoint)
        return real(entrypoint)

    monkeypatch.setattr(registry_module, "import_entrypoint", counting)
    registry.register("t.const", "tests.plugins:Constant")
    first = registry.load("t.const")
    assert registry.load("t.const") is first is plugins.Constant
    registry.info("t.const")
    assert calls == ["tests.plugins:Constant"]
    # Unregistering drops the cached class.
    registry.unregister("t.const")
    with pytest.raises(RegistryError):
        registry.load("t.const")
    registry.register("t.const", "tests.plugins:Constant")
    registry.load("t.const")
    assert calls == ["tests.plugins:Constant"] * 2


@pytest.mark.parametrize(
    ("entrypoint", "message"),
    [
        ("tests.plugins:NotAScorer", "score"),
        ("os:system", "not a class"),
        ("builtins:eval", "not a class"),
        ("subprocess:Popen", "score"),
        ("nope.nothing:Thing", "Cannot import"),
        ("tests.plugins:Missing", "Cannot import"),
        ("tests.plugins:BadSchema.nope", "Cannot import"),
    ],
)
def test_load_refuses_non_scorers(registry, entrypoint, message):
    registry.register("t.x", entrypoint)  # registering never imports
    with pytest.raises(RegistryError, match=message):
        registry.load("t.x")
    with pytest.raises(RegistryError):  # and so build_scorer refuses it (a ValueError)
        build_scorer(ScoringSetup(strategy="custom", plugin_id="t.x"), registry)


def test_register_does_not_import(registry, monkeypatch):
    spy = _ImportSpy({"podium_spy_mod"})
    monkeypatch.setattr(sys, "meta_path", [spy, *sys.meta_path])
    registry.register("t.spy", "podium_spy_mod:Thing")
    registry.register_mapping({"t.spy2": "podium_spy_mod:Other"})
    assert registry.verify("t.spy", "") == "podium_spy_mod:Thing"
    assert spy.seen == []
    with pytest.raises(RegistryError):
        registry.load("t.spy")
    assert spy.seen == ["podium_spy_mod"]  # only load() imports, and only registered ones


def test_schema_must_be_a_dict(registry, monkeypatch):
    module = types.ModuleType("podium_schema_mod")

    class ListSchema:
        config_schema = ["not", "a", "schema"]

        def score(self, metrics, config, ctx):
            return {"score": 1.0}

    module.ListSchema = ListSchema
    monkeypatch.setitem(sys.modules, "podium_schema_mod", module)
    registry.register("t.list", "podium_schema_mod:ListSchema")
    with pytest.raises(RegistryError, match="config_schema"):
        registry.load("t.list")


# -- info ------------------------------------------------------------------------------
def test_info_of_weighted(registry):
    info = registry.info(WEIGHTED_ID)
    assert info.plugin_id == WEIGHTED_ID
    assert info.entrypoint == WEIGHTED_ENTRYPOINT
    assert info.name == "Weighted score"
    assert info.description == WeightedScorer.description
    assert info.config_schema == WeightedScorer.config_schema
    assert set(info.config_schema["properties"]) == {
        "success_bonus",
        "rating_weight",
        "time_penalty",
        "token_penalty",
    }
    assert info.runs_in_process is True
    assert info.aliases == (WEIGHTED_LEGACY_ENTRYPOINT,)


@pytest.mark.parametrize(
    ("entrypoint", "name", "description", "schema"),
    [
        (
            "tests.plugins:Constant",
            "Constant",
            "Scores every attempt with config['value'] (default 1.0).",
            plugins.Constant.config_schema,
        ),
        (
            "tests.plugins:TokensScorer",
            "TokensScorer",
            "Score = tokens_total (or 0); fails for tokens_total == 13.",
            None,
        ),
        (
            "tests.plugins:EchoContext",
            "EchoContext",
            "Echoes the metrics, config and context it was given.",
            plugins.EchoContext.config_schema,
        ),
    ],
)
def test_info_of_plugins(registry, entrypoint, name, description, schema):
    registry.register("t.x", entrypoint)
    info = registry.info("t.x")
    assert (info.plugin_id, info.entrypoint) == ("t.x", entrypoint)
    assert info.name == name
    assert info.description == description
    assert info.config_schema == schema
    assert info.runs_in_process is False
    assert info.aliases == ()


# -- runs_in_process -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("plugin_id", "entrypoint", "builtin", "expected"),
    [
        pytest.param("t.pid", "tests.plugins:ReportsPid", False, False, id="third-party-claims"),
        pytest.param("t.pid", "tests.plugins:ReportsPid", True, True, id="builtin-declares"),
        pytest.param("t.c", "tests.plugins:Constant", True, False, id="builtin-not-declared"),
        pytest.param("t.c", "tests.plugins:Constant", False, False, id="third-party-plain"),
        pytest.param("acme.w", WEIGHTED_ENTRYPOINT, False, False, id="weighted-as-third-party"),
    ],
)
def test_runs_in_process_only_for_builtins(registry, plugin_id, entrypoint, builtin, expected):
    registry.register(plugin_id, entrypoint, builtin=builtin)
    assert registry.info(plugin_id).runs_in_process is expected


def test_unregister_drops_builtin_flag(registry):
    registry.unregister(WEIGHTED_ID)
    assert registry.ids() == []
    registry.register(WEIGHTED_ID, WEIGHTED_ENTRYPOINT)
    assert registry.info(WEIGHTED_ID).runs_in_process is False
