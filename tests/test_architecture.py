"""The house plan, checked: ``challenges/`` imports one way (entry points → capabilities
→ leaderboards → models → the scoring engine), with no import cycle between modules,
lazy imports included. docs/architecture.md explains the plan."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
APP = PROJECT / "challenges"

# Each top-level room of the app and its layer: a room may import rooms of lower layers.
LAYERS = {
    "urls": 6,
    "api": 5,
    "public": 5,
    "admin": 5,
    "management": 5,
    "templatetags": 5,
    "tasks": 5,
    "boards": 4.5,  # what readers are served of a board: every entry point reads through it
    "transfer": 4,
    "setup": 3,
    "redblue": 2.5,  # submissions use ingestion's rules and players; setup checks settings
    "ingestion": 2,
    "rescoring": 1.5,  # ingestion queues the first rescore of a challenge made without a version
    "collections": 1.2,  # standings over several challenges' boards
    "events": 1.2,  # announces what the public boards show; the capabilities above tell it
    "leaderboards": 1,
    "enqueue": 0.9,  # every capability hands work to the tasks through it, by name
    "audit": 0.7,  # every capability records what it changed
    "fieldsets": 0.5,
    "permissions": 0,
    "text": -1,  # text checks models use: below them
    "models": 0,
    "migrations": 0,
}
# Deliberate sideways arrows between entry points, each with its reason.
SIDEWAYS = {
    ("transfer", "api"): "an imported file is validated by the API's own serializers",
    ("templatetags", "admin"): "the admin templates' tags render the admin's progress box",
}
WIRING = {"apps", "__init__"}  # AppConfig.ready connects receivers: it may import anything


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module of the app that ``path`` imports, at any depth of the file."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                exists = (PROJECT / Path(*candidate.split("."))).with_suffix(".py").exists() or (
                    PROJECT / Path(*candidate.split("."))
                ).is_dir()
                found.add(candidate if exists else base)
    return {name for name in found if name == "challenges" or name.startswith("challenges.")}


def _graph() -> dict[str, set[str]]:
    return {
        _module_name(path): _imports(path)
        for path in APP.rglob("*.py")
        if "migrations" not in path.parts
    }


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_room_has_a_layer():
    rooms = {_room(m) for m in _graph()} - WIRING
    assert rooms <= set(LAYERS), f"rooms without a layer: {sorted(rooms - set(LAYERS))}"


def _violations(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        source = _room(module)
        if source in WIRING:
            continue
        for target in targets:
            room = _room(target)
            if room in (source, "__init__") or (source, room) in SIDEWAYS:
                continue
            if LAYERS[room] >= LAYERS[source]:
                wrong.append(f"{module} → {target}")
    return sorted(wrong)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    modules = {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(modules[node]):
            if state[nxt] == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if state[nxt] == 0 and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(modules):
        if state[module] == 0 and (found := visit(module)):
            return found
    return None


def test_rooms_import_only_downward():
    wrong = _violations(_graph())
    assert not wrong, "imports that go up or sideways:\n" + "\n".join(wrong)


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_scoring_imports_nothing_of_the_app():
    # scoring/ sits below the models: its commands, registry and sandbox read the
    # engine's own constants, never the app's (a management command is no exception).
    upward = {
        f"{_module_name(path)} → {target}"
        for path in (PROJECT / "scoring").rglob("*.py")
        for target in _imports(path)
    }
    assert not upward, "scoring/ imports the app:\n" + "\n".join(sorted(upward))


def test_the_checks_can_fail():
    # The old cycle (services → rescoring → services, lazily) and an upward arrow are seen.
    old = {
        "challenges.ingestion.services": {"challenges.rescoring.jobs"},
        "challenges.rescoring.jobs": {"challenges.ingestion.services", "challenges.tasks"},
        "challenges.tasks": {"challenges.rescoring.jobs"},
    }
    assert _cycle(old)
    assert "challenges.rescoring.jobs → challenges.tasks" in _violations(old)
    # and the walker sees a lazy import inside a function
    assert "challenges.tasks" in _imports(APP / "apps.py")


# --- one home for raw SQL -------------------------------------------------------------------
# The database module: the statements (sql.py) and the bulk write paths that feed them
# (bulk.py: COPY text, models built positionally, threads on their own connections).
SQL_HOMES = (APP / "leaderboards" / "sql.py", APP / "leaderboards" / "bulk.py")
# What only the SQL homes may touch, each a node of the syntax tree (a text search would
# take ``copy.copy(model)`` for a COPY): the vendor switch, a cursor, a cursor's COPY, raw
# SQL expressions, Django's private model attributes.
RAW_SQL_MARKS = (
    "postgres(",  # the vendor branch (sql.postgres)
    "connection.vendor",
    "cursor(",  # connection.cursor(), connections[...].cursor()
    ".copy(",  # a cursor's COPY; copy.copy(...) of the standard library is not one
    "RawSQL",
    ".raw(",
    ".extra(",
    "._state",  # a model's own self._state in models.py is Django's documented idiom
    ".set_cached_value(",
)


def _marks(tree: ast.AST, *, models: bool) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        mark = None
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("postgres", "cursor", "raw", "extra", "set_cached_value"):
                mark = f".{name}(" if name in ("raw", "extra", "set_cached_value") else f"{name}("
            elif name == "copy" and not (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "copy"
            ):
                mark = ".copy("
        elif isinstance(node, ast.Attribute):
            if node.attr == "vendor" and getattr(node.value, "id", "") == "connection":
                mark = "connection.vendor"
            elif node.attr == "_state" and not (models and getattr(node.value, "id", "") == "self"):
                mark = "._state"
            elif node.attr == "RawSQL":
                mark = "RawSQL"
        elif isinstance(node, ast.Name) and node.id == "RawSQL":
            mark = "RawSQL"
        elif isinstance(node, ast.ImportFrom) and any(a.name == "RawSQL" for a in node.names):
            mark = "RawSQL"
        if mark is not None:
            found.append((getattr(node, "lineno", 0), mark))
    return found


def _raw_sql_outside_home(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        if path in SQL_HOMES or "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        marks = _marks(tree, models=path.name == "models.py")
        found += [f"{path.name}:{number}: {mark}" for number, mark in sorted(set(marks))]
    return found


def test_every_raw_statement_lives_in_the_sql_homes():
    """Cursors, vendor branches, COPY, raw SQL expressions and Django's private model
    attributes: only in leaderboards/sql.py and leaderboards/bulk.py."""
    assert _raw_sql_outside_home(sorted(APP.rglob("*.py"))) == []


STRAYS = {
    "postgres(": "if sql.postgres():\n    pass\n",
    "connection.vendor": "x = connection.vendor\n",
    "cursor(": "with connection.cursor() as cursor:\n    pass\n",
    ".copy(": "with cursor.copy('COPY t FROM STDIN') as c:\n    pass\n",
    "RawSQL": "from django.db.models.expressions import RawSQL\n",
    ".raw(": "Player.objects.raw('SELECT 1')\n",
    ".extra(": "Player.objects.extra(where=['1'])\n",
    "._state": "attempt._state.adding = False\n",
    ".set_cached_value(": "field.set_cached_value(row, version)\n",
}


def test_the_sql_home_check_fails_on_each_mark(tmp_path):
    assert set(STRAYS) == set(RAW_SQL_MARKS)
    for mark, text in STRAYS.items():
        stray = tmp_path / "stray.py"
        stray.write_text(text)
        assert _raw_sql_outside_home([*SQL_HOMES, stray]) == [f"stray.py:1: {mark}"], mark


def test_the_sql_home_check_is_precise(tmp_path):
    # copy.copy of a model is no COPY, a model's own self._state in models.py is Django's
    # idiom, and a name that merely contains a mark is none.
    stray = tmp_path / "stray.py"
    stray.write_text("import copy\nc = copy.copy(challenge)\ncursors = {}\n")
    models = tmp_path / "models.py"
    models.write_text("def save(self):\n    return self._state.adding\n")
    assert _raw_sql_outside_home([stray, models]) == []
    stray.write_text("def save(self):\n    return self._state.adding\n")
    assert _raw_sql_outside_home([stray]) == ["stray.py:2: ._state"]


# --- names a search can find --------------------------------------------------------------
# Django's conventional module names may repeat, one per package; any other name is unique
# under challenges/ and scoring/, so "which rules.py?" never has to be asked.
CONVENTIONAL = {
    "__init__", "admin", "apps", "forms", "models", "selectors", "serializers",
    "services", "tasks", "urls", "views",
}  # fmt: skip


def _repeated_basenames(paths: list[Path], root: Path = PROJECT) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if "migrations" in path.parts or path.stem in CONVENTIONAL:
            continue
        seen[path.stem].append(str(path.relative_to(root)))
    return {name: where for name, where in seen.items() if len(where) > 1}


def _python_files() -> list[Path]:
    return sorted([*APP.rglob("*.py"), *(PROJECT / "scoring").rglob("*.py")])


def test_module_basenames_are_unique():
    assert _repeated_basenames(_python_files()) == {}


def test_no_single_letter_module_alias():
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += [
                    f"{path.relative_to(PROJECT)}: {alias.name} as {alias.asname}"
                    for alias in node.names
                    if alias.asname and len(alias.asname) == 1
                ]
    assert found == []


def test_the_name_checks_can_fail(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rules.py").write_text("")
        (tmp_path / folder / "views.py").write_text("")
    repeated = _repeated_basenames(sorted(tmp_path.rglob("*.py")), root=tmp_path)
    assert {name: len(where) for name, where in repeated.items()} == {"rules": 2}
