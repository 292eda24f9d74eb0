"""Challenge definitions as files: ``challenge_apply`` and ``challenge_dump``.

A definition is a YAML file (loaded safely: plain data only) of

    name: Field completeness
    slug: field-completeness          # the challenge it creates or updates
    description: "..."                # Markdown
    is_active: true
    definition:
      rank_by: completeness.is_complete
      timeout_ms: 5000
      scorers:
        - type: python
          key: completeness
          display_name: Completeness
          purpose: score
          compute_scores_snippet: !include "completeness_scorer.py"
          config: {field: answer}
          metrics:
            - {type: mean, field: is_complete, name: Field Completeness}

``!include "file"`` is replaced by that file's text, read relative to the YAML file and
never from outside its folder. ``definition`` may instead name a built-in strategy or a
plugin (``scoring_strategy``, ``scoring_plugin_id``, ``scoring_config``). The file is
the whole truth: what it leaves out is empty (or the default), so applying it twice
changes nothing the second time, and a scoring change makes a version and a rescore
through the same service the admin and the API call.

``challenge_dump`` writes a challenge back as such a file plus one ``.py`` per snippet,
so dump → apply round-trips.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.db import IntegrityError, transaction

from challenges import fieldsets
from challenges.models import Challenge, RescoreJob, ScoringVersion
from challenges.setup import services
from challenges.text import text_problem
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.snippet import MAX_CODE_CHARS

INFO_KEYS = ("name", "slug", "description", "is_active", "tenant_id", "app_id", "workflow_id")
DEFINITION_KEYS = (
    "scoring_strategy",
    "scoring_plugin_id",
    "scoring_entrypoint",
    "scoring_config",
    "timeout_ms",
    "scorers",
    "rank_by",
    "lower_is_better",
    "sample_with_metrics",
)
INFO_DEFAULTS: dict[str, Any] = {
    "description": "",
    "is_active": True,
    "tenant_id": "",
    "app_id": "",
    "workflow_id": "",
}
MAX_FILE_BYTES = 1_000_000
MAX_INCLUDE_BYTES = MAX_CODE_CHARS * 4


class DefinitionInvalid(ValueError):
    """A definition file that cannot be applied; the message names the file, the line
    (when known) and the field."""


# --- loading ------------------------------------------------------------------------------
class _Include:
    """A ``!include`` in a dumped file: its path, relative to the YAML file."""

    def __init__(self, path: str):
        self.path = path


class _Loader(yaml.SafeLoader):
    """Safe loading plus ``!include``, confined to the definition's folder. Aliases
    (``*name``) are refused: a definition needs none, and a few nested ones expand to
    billions of values for whoever walks the result."""

    folder: Path
    source: str
    included: dict[int, str]  # id of the constructed text → the file it came from
    included_bytes: int  # of every !include so far: bounded like a request's body

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise DefinitionInvalid(
                f"{self.source}, line {mark.line + 1}: aliases (*name) are not allowed; "
                "write the value out"
            )
        return super().compose_node(parent, index)


def _include(loader: _Loader, node: yaml.Node) -> str:
    where = f"{loader.source}, line {node.start_mark.line + 1}"
    if not isinstance(node, yaml.ScalarNode):
        raise DefinitionInvalid(f"{where}: !include takes a file name")
    name = loader.construct_scalar(node)
    if not name or os.path.isabs(name) or "\x00" in name:
        raise DefinitionInvalid(f"{where}: !include {name!r}: a path relative to the file")
    folder = loader.folder.resolve()
    target = (folder / name).resolve()  # symlinks followed: a link out of the folder too
    if target != folder and folder not in target.parents:
        raise DefinitionInvalid(f"{where}: !include {name!r} is outside the definition's folder")
    if not target.is_file():
        raise DefinitionInvalid(f"{where}: !include {name!r}: no such file")
    if target.stat().st_size > MAX_INCLUDE_BYTES:
        raise DefinitionInvalid(f"{where}: !include {name!r} is over {MAX_INCLUDE_BYTES} bytes")
    try:
        with target.open(encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise DefinitionInvalid(f"{where}: !include {name!r} is not UTF-8 text") from None
    loader.included_bytes += len(text.encode("utf-8", "surrogatepass"))
    limit = settings.PODIUM_MAX_BODY_BYTES
    if loader.included_bytes > limit:
        raise DefinitionInvalid(
            f"{where}: the included files add up to over {limit:,} bytes "
            "(PODIUM_MAX_BODY_BYTES, the API's body limit)"
        )
    text = str(text)  # a distinct object, so its origin can be told apart below
    loader.included[id(text)] = name
    return text


_Loader.add_constructor("!include", _include)
# JSON has no dates: a date-looking value stays the text it is (a constructed date made
# a traceback wherever it was stored).
_Loader.yaml_implicit_resolvers = {
    first: [(tag, found) for tag, found in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _lines(node: yaml.Node, path: str, out: dict[str, int]) -> None:
    """Line (1-based) of every field of the document, by path ("definition.scorers[0]")."""
    if path:
        out.setdefault(path, node.start_mark.line + 1)  # a key's own line, when it has one
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                name = key.value
                child = f"{path}.{name}" if path else name
                out[child] = key.start_mark.line + 1
                _lines(value, child, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            _lines(value, f"{path}[{i}]", out)


@dataclass(frozen=True)
class Definition:
    source: str  # the file's name, for messages
    info: dict[str, Any]
    setup: dict[str, Any]
    lines: dict[str, int]
    included: dict[str, str]  # field path → the file its text was included from

    def where(self, field: str) -> str:
        """ "file.yaml, line 12, definition.scorers[0].config" (the nearest known line)."""
        probe = field
        while probe and probe not in self.lines:
            probe = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            if probe == field:
                break
        line = self.lines.get(probe)
        text = f"{self.source}, line {line}" if line else self.source
        origin = self.included.get(field)
        return f"{text}, {field}" + (f" (from {origin})" if origin else "")


def _field_path(setup_field: str) -> str:
    if setup_field in DEFINITION_KEYS or setup_field.startswith("scorers["):
        return f"definition.{setup_field}"
    if setup_field in ("scoring_code", "score_key", "metrics"):
        # the single-scorer form is written as a list of one keyless scorer
        sub = {"scoring_code": "compute_scores_snippet", "metrics": "metrics"}.get(setup_field)
        return f"definition.scorers[0].{sub}" if sub else "definition.rank_by"
    return setup_field


def _origins(value: Any, path: str, ids: dict[int, str], out: dict[str, str]) -> None:
    if isinstance(value, str) and id(value) in ids:
        out[path] = ids[id(value)]
    elif isinstance(value, dict):
        for k, v in value.items():
            _origins(v, f"{path}.{k}" if path else str(k), ids, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _origins(v, f"{path}[{i}]", ids, out)


def definition_load(*, path: str | Path) -> Definition:
    """Read and check the shape of a definition file (not its scoring: see apply)."""
    path = Path(path)
    source = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DefinitionInvalid(f"{source}: cannot be read: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise DefinitionInvalid(f"{source}: over {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DefinitionInvalid(f"{source}: not UTF-8 text") from None
    loader = _Loader(text)
    loader.folder = path.parent
    loader.source = source
    loader.included = {}
    loader.included_bytes = 0
    try:
        node = loader.get_single_node()
        if node is None:
            raise DefinitionInvalid(f"{source}: the file is empty")
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f", line {mark.line + 1}" if mark else ""
        context = ""
        if exc.context and exc.problem and exc.context_mark:
            context = f" ({exc.context}, from line {exc.context_mark.line + 1})"
        raise DefinitionInvalid(f"{source}{line}: {exc.problem or exc.context}{context}") from None
    except yaml.YAMLError as exc:
        raise DefinitionInvalid(f"{source}: {exc}") from None
    except RecursionError:
        raise DefinitionInvalid(f"{source}: nested too deeply") from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    included: dict[str, str] = {}
    try:
        _lines(node, "", lines)
        _origins(data, "", loader.included, included)
    except RecursionError:
        raise DefinitionInvalid(f"{source}: nested too deeply") from None

    def fail(field: str, message: str) -> DefinitionInvalid:
        return DefinitionInvalid(
            f"{Definition(source, {}, {}, lines, included).where(field)}: {message}"
        )

    problem = text_problem(data)
    if problem is not None:
        where, what = problem
        field = "".join(
            f"[{part}]" if isinstance(part, int) else (f".{part}" if i else str(part))
            for i, part in enumerate(where)
        )
        raise fail(field, f"text must be valid Unicode: {what}")
    if not isinstance(data, dict):
        raise DefinitionInvalid(f"{source}: a mapping of name, slug, … and definition")
    allowed = (*INFO_KEYS, "definition")
    for key in data:
        if key not in allowed:
            raise fail(str(key), f"unknown field; known: {', '.join(allowed)}")
    for key in ("name", "slug"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise fail(key, "required: a non-empty string")
    info = {**INFO_DEFAULTS, **{k: data[k] for k in INFO_KEYS if k in data}}
    for key in INFO_KEYS:
        expected = bool if key == "is_active" else str
        if not isinstance(info[key], expected):
            raise fail(key, f"must be {'true or false' if expected is bool else 'a string'}")
    if not re.fullmatch(r"[-a-zA-Z0-9_]{1,200}", info["slug"]):
        raise fail("slug", "letters, digits, '-' and '_' only (at most 200)")
    definition = data.get("definition")
    if definition is None:
        definition = {}
    if not isinstance(definition, dict):
        raise fail("definition", "must be a mapping (scorers, rank_by, …)")
    for key in definition:
        if key not in DEFINITION_KEYS:
            raise fail(f"definition.{key}", f"unknown field; known: {', '.join(DEFINITION_KEYS)}")
    setup = _setup_from(definition)
    return Definition(source, info, setup, lines, included)


def _setup_from(definition: dict[str, Any]) -> dict[str, Any]:
    """The complete scoring setup a definition stands for (left out: empty/default)."""
    setup = {**copy.deepcopy(fieldsets.EMPTY_SETUP), "timeout_ms": 5000}
    strategy = definition.get("scoring_strategy")
    if strategy is None:
        strategy = strategies.PYTHON if definition.get("scorers") else strategies.FIRST
    setup["scoring_strategy"] = strategy
    for key in DEFINITION_KEYS:
        if key in definition and key != "scoring_strategy":
            value = definition[key]
            setup[key] = copy.deepcopy(fieldsets.EMPTY_SETUP.get(key)) if value is None else value
    return setup


# --- applying -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ApplyResult:
    challenge: Challenge
    created: bool
    changed: bool  # anything written at all
    new_version: ScoringVersion | None
    job: RescoreJob | None


def _invalid(definition: Definition, exc: scoring.SetupInvalid) -> DefinitionInvalid:
    return DefinitionInvalid(
        "; ".join(
            f"{definition.where(_field_path(field))}: {message}"
            for field, message in exc.errors.items()
        )
    )


def challenge_apply(*, path: str | Path, by: Any = None) -> ApplyResult:
    """Create or update the challenge a definition file names (by slug). Raises
    DefinitionInvalid; writes nothing then."""
    definition = definition_load(path=path)
    info, setup = definition.info, definition.setup
    try:
        with transaction.atomic():
            challenge = Challenge.objects.select_for_update().filter(slug=info["slug"]).first()
            if challenge is None:
                try:
                    with transaction.atomic():
                        created = services.challenge_create(data={**info, **setup}, by=by)
                except IntegrityError:
                    raise DefinitionInvalid(
                        f"{definition.where('slug')}: a challenge with this slug was created "
                        "meanwhile; apply the file again to update it"
                    ) from None
                return ApplyResult(created, True, True, created.active_version, None)
            valid = scoring.setup_validate(setup=setup)
            same_setup = valid == challenge.setup_dict()
            same_info = all(getattr(challenge, k) == v for k, v in info.items())
            if same_setup and same_info:
                return ApplyResult(challenge, False, False, None, None)
            data = dict(info) if same_setup else {**info, **setup}
            update = services.challenge_update(challenge=challenge, data=data, by=by)
            return ApplyResult(update.challenge, False, True, update.new_version, update.job)
    except scoring.SetupInvalid as exc:
        raise _invalid(definition, exc) from None


# --- dumping ------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    pass


# Read as line breaks by YAML in a block or plain scalar (and so turned into "\n" on the
# way back): text holding one is written double-quoted, where they are escapes.
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if _OTHER_BREAKS.search(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(
    _Include, lambda dumper, value: dumper.represent_scalar("!include", value.path, style='"')
)


def _file_name(stem: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_") or "snippet"
    name, n = f"{base}.py", 1
    while name in taken:
        n += 1
        name = f"{base}_{n}.py"
    taken.add(name)
    return name


def _snippets_out(
    scorer: dict[str, Any], stem: str, files: dict[str, str], taken: set[str]
) -> dict[str, Any]:
    """A scorer for the file: its code (and its python metrics' code) as includes."""
    out = dict(scorer)
    name = _file_name(stem, taken)
    files[name] = scorer["compute_scores_snippet"]
    out["compute_scores_snippet"] = _Include(name)
    metrics = []
    for n, metric in enumerate(scorer.get("metrics") or [], start=1):
        metric = dict(metric)
        if metric.get("type") == "python":
            file = _file_name(f"{stem}_metric_{n}", taken)
            files[file] = metric["compute_metric_snippet"]
            metric["compute_metric_snippet"] = _Include(file)
        metrics.append(metric)
    out["metrics"] = metrics
    return out


def definition_of(*, challenge: Challenge) -> tuple[dict[str, Any], dict[str, str]]:
    """(the YAML document, {file name: snippet text}) describing the challenge."""
    doc: dict[str, Any] = {k: getattr(challenge, k) for k in INFO_KEYS}
    definition: dict[str, Any] = {}
    files: dict[str, str] = {}
    taken: set[str] = set()
    strategy = challenge.scoring_strategy
    if strategy == strategies.PYTHON and challenge.scorers:
        if challenge.rank_by:
            definition["rank_by"] = challenge.rank_by
        definition["scorers"] = [
            _snippets_out(dict(s), s["key"], files, taken) for s in challenge.scorers
        ]
    elif strategy == strategies.PYTHON:
        only = {
            "type": "python",
            "compute_scores_snippet": challenge.scoring_code,
            "config": challenge.scoring_config or {},
            "metrics": challenge.metrics or [],
        }
        if challenge.score_key:
            definition["rank_by"] = challenge.score_key
        definition["scorers"] = [_snippets_out(only, "scorer", files, taken)]
    else:
        definition["scoring_strategy"] = strategy
        if strategy == strategies.CUSTOM:
            definition["scoring_plugin_id"] = challenge.scoring_plugin_id
            definition["scoring_entrypoint"] = challenge.scoring_entrypoint
            definition["scoring_config"] = challenge.scoring_config or {}
    for flag in ("lower_is_better", "sample_with_metrics"):  # python only; written when set
        if getattr(challenge, flag):
            definition[flag] = True
    definition["timeout_ms"] = challenge.timeout_ms
    doc["definition"] = definition
    return doc, files


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: into a new file of a random name
    made in the same folder (never an existing one, nor through a link planted there),
    then renamed over the path."""
    with tempfile.NamedTemporaryFile(
        "w",
        encoding="utf-8",
        newline="",
        dir=path.parent,
        prefix=f".{path.name}.",
        suffix=".partial",
        delete=False,
    ) as f:
        f.write(text)
    os.replace(f.name, path)


def challenge_dump(*, challenge: Challenge, directory: str | Path) -> list[Path]:
    """Write ``<slug>.yaml`` and its snippet files into ``directory`` (created if
    missing). Returns the paths written, the YAML first."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    doc, files = definition_of(challenge=challenge)
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    written = [folder / f"{challenge.slug}.yaml"]
    _write(written[0], text)
    for name, code in files.items():
        _write(folder / name, code)
        written.append(folder / name)
    return written
