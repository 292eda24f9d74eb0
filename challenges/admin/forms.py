"""The challenge form of the admin: a scoring section that follows the strategy.

What each strategy shows (the page's script hides the rest; without it, all shows):

- ``first``, ``fastest``, ``fewest_tokens``, ``highest_rating``: nothing more.
- ``custom``: a dropdown of the registered plugins; the entrypoint, read-only, filled
  from the registry; a *weights form* generated from the plugin's ``config_schema`` (one
  labelled number, text or checkbox input per option, with its default, bounds and help
  text); raw JSON under "Advanced" (the only way for a plugin without a usable schema).
- ``python``: a code editor, ``score_key``, one input per ``<< config.KEY >>`` template
  value, and the metrics as rows.

Every value is checked where it is typed (numbers, bounds), then the whole setup by the
plugin's schema (``validate_config``) and by ``setup_validate``, the validation the API
uses; each error lands on the input it is about, and nothing is saved. People who may
not change scoring (``is_scoring_admin`` false) get the section disabled.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.functional import cached_property

from challenges.admin import scorers_admin as admin_scorers
from challenges.fieldsets import BOARD_FIELDS, RED_BLUE_FIELDS
from challenges.ingestion.admission import competition_errors
from challenges.leaderboards.evaluation import board_errors
from challenges.models import Attempt, Challenge, LateAttempts, ScoringStrategy
from challenges.redblue.validation import plugin_touched, red_blue_errors
from challenges.setup import services as setup_services
from challenges.text import SURROGATE, line_breaks_normalised, path_label, text_problem
from scoring.catalogue import OK, plugins_catalogue
from scoring.engine import metrics as engine_metrics
from scoring.engine import strategies
from scoring.engine.config import validate_config
from scoring.engine.placeholders import PLACEHOLDER
from scoring.engine.protocol import MAX_TIMEOUT_MS, ConfigError
from scoring.services import SetupInvalid, setup_same, setup_validate

# A setup change on a challenge with more attempts than this asks for confirmation.
CONFIRM_OVER = 1000
WEIGHT_PREFIX = "weights."
TEMPLATE_PREFIX = "template."
# The engine's words for a placeholder without a value (scoring.engine.snippet.prepare).
MISSING_VALUE = re.compile(r"no value for << config\.(\w+) >>")
METRIC_PREFIX = "metric."
# The metric types and their words, from the engine (scoring/engine/metrics.py).
METRIC_TYPES = [(kind, engine_metrics.LABELS[kind]) for kind in engine_metrics.TYPES]
# Metrics that compare a prediction field with a label field.
LABELLED_METRICS = {*engine_metrics.BINARY, *engine_metrics.MULTICLASS}
METRIC_PARTS = ("type", "field", "label", "name")


# --- the registered plugins, as the form shows them -------------------------------------
@dataclass(frozen=True)
class WeightSpec:
    """One option of a plugin's config_schema, shown as one input."""

    key: str
    kind: str  # number, integer, boolean, string
    title: str
    description: str
    default: Any
    minimum: float | None
    maximum: float | None
    choices: tuple[Any, ...]
    required: bool

    def field_name(self, plugin_id: str) -> str:
        return f"{WEIGHT_PREFIX}{plugin_id}.{self.key}"

    def help_text(self) -> str:
        parts = [self.description.rstrip(".") + "." if self.description else ""]
        if self.default is not None:
            parts.append(f"Default: {_num(self.default)}.")
        if self.minimum is not None and self.maximum is not None:
            parts.append(f"From {_num(self.minimum)} to {_num(self.maximum)}.")
        elif self.minimum is not None:
            parts.append(f"At least {_num(self.minimum)}.")
        elif self.maximum is not None:
            parts.append(f"At most {_num(self.maximum)}.")
        return " ".join(p for p in parts if p)

    def form_field(self) -> forms.Field:
        common = {"label": self.title, "help_text": self.help_text(), "required": False}
        if self.kind == "boolean":
            return forms.BooleanField(**common)
        if self.choices:
            choices = [("", "—"), *((str(c), str(c)) for c in self.choices)]
            return forms.ChoiceField(choices=choices, **common)
        if self.kind == "string":
            return forms.CharField(strip=False, **common)
        bounds = {"min_value": self.minimum, "max_value": self.maximum}
        if self.kind == "integer":
            return forms.IntegerField(**bounds, **common)
        return forms.FloatField(widget=forms.NumberInput(attrs={"step": "any"}), **bounds, **common)


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    return json.dumps(value)


_KINDS = {"number", "integer", "boolean", "string"}


def weight_specs(schema: dict[str, Any] | None) -> list[WeightSpec]:
    """The inputs of a schema's top-level options; [] when some option cannot be an input
    (a nested object, a list, a type union): then the config is edited as JSON."""
    props = (schema or {}).get("properties")
    if not isinstance(props, dict) or not props:
        return []
    required = set((schema or {}).get("required") or ())
    specs = []
    for key, prop in props.items():
        if not isinstance(prop, dict) or prop.get("type") not in _KINDS:
            return []
        enum = prop.get("enum")
        specs.append(
            WeightSpec(
                key=key,
                kind=prop["type"],
                title=str(prop.get("title") or key.replace("_", " ").capitalize()),
                description=str(prop.get("description") or ""),
                default=prop.get("default"),
                minimum=prop.get("minimum"),
                maximum=prop.get("maximum"),
                choices=tuple(enum) if isinstance(enum, list) else (),
                required=key in required,
            )
        )
    return specs


@dataclass(frozen=True)
class PluginChoice:
    plugin_id: str
    name: str
    description: str
    entrypoint: str
    schema: dict[str, Any] | None
    weights: tuple[WeightSpec, ...]
    error: str = ""  # the plugin cannot be loaded

    @property
    def label(self) -> str:
        return f"{self.name} ({self.plugin_id})"


def plugin_catalogue() -> dict[str, PluginChoice]:
    """Every registered plugin, by id, with what the form needs to show it: the same
    source as ``GET /api/scorers/`` (broken plugins included, with their error)."""
    return {
        entry.id: PluginChoice(
            entry.id,
            entry.name,
            entry.description,
            entry.entrypoint,
            entry.config_schema,
            tuple(weight_specs(entry.config_schema)) if entry.status == OK else (),
            entry.error,
        )
        for entry in plugins_catalogue()
    }


def placeholders(code: str) -> list[str]:
    """The KEYs of ``<< config.KEY >>`` in the code, in order of first use."""
    return list(dict.fromkeys(PLACEHOLDER.findall(code or "")))


def template_value(text: str) -> Any:
    """What a template input means: a JSON number, true/false or "quoted text" keep their
    type; anything else is text."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, int | float | bool | str) else text


def template_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class EscapedJSONField(forms.JSONField):
    """A JSON input that shows a lone surrogate as the escape it was typed as: the page
    that explains the error must itself encode (forms.JSONField writes it out raw)."""

    def prepare_value(self, value: Any) -> Any:
        text = super().prepare_value(value)
        if isinstance(text, str) and SURROGATE.search(text):
            return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        return text


# --- the form ------------------------------------------------------------------------------
class ChallengeAdminForm(forms.ModelForm):
    """A challenge: its description fields (model fields) and its scoring setup (declared
    below and generated in ``__init__``). ``setup`` holds the validated setup after
    ``is_valid()`` (None when it is not valid)."""

    # Set per request by ChallengeAdmin.get_form.
    can_edit_scoring = True
    # Try it / Preview validate the setup only: no confirmation asked.
    for_preview = False

    scoring_strategy = forms.ChoiceField(
        choices=ScoringStrategy.choices,
        label="Strategy",
        initial=strategies.FIRST,
        help_text="How attempts are ranked.",
    )
    scoring_plugin_id = forms.CharField(
        required=False,
        label="Plugin",
        widget=forms.Select(),
        help_text="A registered scorer plugin.",
    )
    scoring_entrypoint = forms.CharField(
        required=False,
        label="Entrypoint",
        widget=forms.TextInput(attrs={"readonly": True, "class": "vTextField scoring-readonly"}),
        help_text="Filled from the plugin registry; only registered entrypoints run.",
    )
    config_as_json = forms.BooleanField(
        required=False,
        label="Edit the config as raw JSON",
        help_text="Use the JSON below instead of the weights form.",
    )
    scoring_config = EscapedJSONField(
        required=False,
        label="Config (JSON)",
        widget=forms.Textarea(attrs={"rows": 6, "class": "vLargeTextField scoring-json"}),
        help_text="A JSON object, checked against the plugin's schema.",
    )
    scoring_code = forms.CharField(
        required=False,
        strip=False,
        label="Code",
        widget=forms.Textarea(
            attrs={
                "rows": 18,
                "class": "code-editor__input",
                "spellcheck": "false",
                "wrap": "off",
                "autocomplete": "off",
            }
        ),
        help_text=(
            "Defines compute_scores(sample) or compute_scores(sample, solver_output) and "
            "returns a dict of scores. Write << config.KEY >> for a template value."
        ),
    )
    score_key = forms.CharField(
        required=False,
        max_length=64,
        label="Score key",
        help_text="The score that ranks the leaderboard (required with several scores).",
    )
    rank_by = forms.CharField(
        required=False,
        max_length=200,
        label="Ranking score",
        widget=forms.TextInput(attrs={"list": "rank-by-options", "class": "vTextField"}),
        help_text="With several scorers: '<scorer key>.<score>'. A trial run of the setup "
        "suggests the scores the scorers returned.",
    )
    lower_is_better = forms.BooleanField(
        required=False,
        label="Lower scores rank first",
        help_text="For a score that is a loss or an error; by default higher ranks first.",
    )
    # Errors about the metrics list as a whole land here; its rows are generated.
    metrics = EscapedJSONField(required=False, widget=forms.HiddenInput, label="Metrics")
    timeout_ms = forms.IntegerField(
        min_value=1,
        max_value=MAX_TIMEOUT_MS,
        initial=5000,
        label="Timeout per attempt (ms)",
        help_text="An attempt whose scorer runs longer gets no score (the error is kept).",
    )
    confirm_rescore = forms.BooleanField(required=False, label="Rescore every attempt")

    class Meta:
        model = Challenge
        fields = list(setup_services.INFO_FIELDS)

    def _name_split_datetimes(self) -> None:
        """Django's date-and-time widget shows "Date:" and "Time:" as text, not as
        labels: each of its two inputs gets its field's name for screen readers."""
        for field in self.fields.values():
            parts = getattr(field.widget, "widgets", None)
            if isinstance(field, forms.SplitDateTimeField) and parts and len(parts) == 2:
                parts[0].attrs["aria-label"] = f"{field.label}: date"
                parts[1].attrs["aria-label"] = f"{field.label}: time"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "late_attempts" in self.fields:
            self.fields["late_attempts"].required = False
        # Left out of a post (a script, an older page): the board fields take their
        # default, the red/blue ones are kept as they are (clean).
        for name in (*BOARD_FIELDS, *RED_BLUE_FIELDS):
            if name in self.fields:
                self.fields[name].required = False
        self.setup: dict[str, Any] | None = None
        self.setup_changed = False
        self._weights_used = False
        instance = self.instance
        if instance.pk:
            for name in setup_services.SETUP_FIELDS:
                self.initial.setdefault(name, getattr(instance, name))
        self._name_split_datetimes()
        self.plugins = plugin_catalogue()
        self._plugin_select()
        self._weight_fields()
        self._template_fields()
        self._metric_fields()
        saved_scorers = list(instance.scorers or []) if self._saved_python else []
        self.scorer_row_count = admin_scorers.add_scorer_fields(self, saved_scorers)
        self._scorer_rows_of: list[int] = []
        self.fields[
            "confirm_rescore"
        ].label = f"Rescore all {self.attempt_count:,} attempts with the new setup"
        if not self.can_edit_scoring:
            for name in self.scoring_field_names:
                self.fields[name].disabled = True

    @property
    def _saved_python(self) -> bool:
        """Whether the form edits a saved python challenge: its saved setup is shown."""
        return bool(self.instance.pk) and self.instance.scoring_strategy == strategies.PYTHON

    # --- generated fields -------------------------------------------------------------
    def _plugin_select(self) -> None:
        choices = [("", "— choose a plugin —")]
        choices += [(p.plugin_id, p.label) for p in self.plugins.values()]
        current = self.instance.scoring_plugin_id if self.instance.pk else ""
        if current and current not in self.plugins:
            choices.append((current, f"{current} (not registered)"))
        self.fields["scoring_plugin_id"].widget.choices = choices

    def _weight_fields(self) -> None:
        current_id = self.instance.scoring_plugin_id if self.instance.pk else ""
        current_config = (self.instance.scoring_config or {}) if self.instance.pk else {}
        for plugin in self.plugins.values():
            for spec in plugin.weights:
                name = spec.field_name(plugin.plugin_id)
                self.fields[name] = spec.form_field()
                value = spec.default
                if plugin.plugin_id == current_id and spec.key in current_config:
                    value = current_config[spec.key]
                self.initial.setdefault(name, value)

    def _template_fields(self) -> None:
        """One input per placeholder of the code (as posted, or as saved), and per value
        the saved config holds."""
        if self.is_bound:
            code = self.data.get("scoring_code", "")
            keys = placeholders(code) + [
                k[len(TEMPLATE_PREFIX) :] for k in self.data if k.startswith(TEMPLATE_PREFIX)
            ]
            saved: dict[str, Any] = {}
        else:
            code = self.instance.scoring_code if self.instance.pk else ""
            saved = (self.instance.scoring_config or {}) if self._saved_python else {}
            keys = placeholders(code) + list(saved)
        for key in dict.fromkeys(keys):
            name = f"{TEMPLATE_PREFIX}{key}"
            self.fields[name] = forms.CharField(
                required=False,
                strip=False,
                label=key,
                help_text=f"The value of << config.{key} >>.",
            )
            if key in saved:
                self.initial[name] = template_text(saved[key])

    def _metric_fields(self) -> None:
        if self.is_bound:
            indexes = [
                int(m.group(1))
                for k in self.data
                if (m := re.fullmatch(rf"{re.escape(METRIC_PREFIX)}(\d+)\.type", k))
            ]
            count = min(max(indexes, default=-1) + 1, 64)
            saved: list[Any] = []
        else:
            saved = list(self.instance.metrics or []) if self._saved_python else []
            count = len(saved) + 1
        for i in range(max(count, 2)):
            row = saved[i] if i < len(saved) and isinstance(saved[i], dict) else {}
            for part in METRIC_PARTS:
                name = f"{METRIC_PREFIX}{i}.{part}"
                if part == "type":
                    field: forms.Field = forms.ChoiceField(
                        choices=[("", "—"), *METRIC_TYPES], required=False, label="Type"
                    )
                else:
                    field = forms.CharField(required=False, label=part.capitalize())
                self.fields[name] = field
                if part in row:
                    self.initial[name] = str(row[part])
        self.metric_row_count = max(count, 2)

    # --- what the template shows --------------------------------------------------------
    @cached_property
    def attempt_count(self) -> int:
        if not self.instance.pk:
            return 0
        return Attempt.objects.filter(challenge=self.instance).count()

    @property
    def needs_confirmation(self) -> bool:
        return bool(self.instance.pk) and self.attempt_count > CONFIRM_OVER

    @property
    def scoring_field_names(self) -> list[str]:
        fixed = [
            "scoring_strategy",
            "scoring_plugin_id",
            "scoring_entrypoint",
            "config_as_json",
            "scoring_config",
            "scoring_code",
            "score_key",
            "lower_is_better",
            "metrics",
            "timeout_ms",
            "confirm_rescore",
            "rank_by",
        ]
        generated = [
            n
            for n in self.fields
            if n.startswith((WEIGHT_PREFIX, TEMPLATE_PREFIX, METRIC_PREFIX, admin_scorers.PREFIX))
        ]
        return fixed + generated

    def plugin_sections(self) -> list[tuple[PluginChoice, list[forms.BoundField]]]:
        return [
            (p, [self[spec.field_name(p.plugin_id)] for spec in p.weights])
            for p in self.plugins.values()
        ]

    def plugin_data(self) -> dict[str, Any]:
        """For the page's script (json_script): what picking a plugin changes."""
        return {
            p.plugin_id: {"entrypoint": p.entrypoint, "has_form": bool(p.weights)}
            for p in self.plugins.values()
        }

    def scorer_rows(self) -> list[dict[str, forms.BoundField]]:
        return admin_scorers.scorer_rows(self, self.scorer_row_count)

    def template_fields(self) -> list[forms.BoundField]:
        return [self[n] for n in self.fields if n.startswith(TEMPLATE_PREFIX)]

    def metric_rows(self) -> list[list[forms.BoundField]]:
        return [
            [self[f"{METRIC_PREFIX}{i}.{part}"] for part in METRIC_PARTS]
            for i in range(self.metric_row_count)
        ]

    def scoring_errors(self) -> dict[str, list[str]]:
        """Errors of the scoring fields, by label (Try it and Preview list them)."""
        names = set(self.scoring_field_names) - {"confirm_rescore"}
        out = {}
        for name, errors in self.errors.items():
            if name in names:
                out[self.fields[name].label or name] = list(errors)
            elif name == "__all__":
                out["Setup"] = list(errors)
        return out

    # --- validation -----------------------------------------------------------------------
    probe_errors: dict[str, str] = {}  # set by the admin: challenges.setup.probe's verdict

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        # A browser posts textareas' line breaks as CRLF: compared and stored as LF.
        cleaned.update(line_breaks_normalised(cleaned))
        bad_text = False
        for name, value in list(cleaned.items()):  # JSON escapes can bring them in
            problem = text_problem(value)
            if problem is not None:
                path, what = problem
                where = f" at {path_label(path)}" if path else ""
                self.add_error(name, f"Text must be valid Unicode: {what}{where}.")
                bad_text = True
        if "late_attempts" in self.fields and not cleaned.get("late_attempts"):
            cleaned["late_attempts"] = LateAttempts.REFUSE  # left out of a form: the default
        for field, message in competition_errors(cleaned).items():
            if field in self.fields:
                self.add_error(field, message)
        for name in BOARD_FIELDS:
            if name not in self.fields or name == "slice_by":
                continue
            if self.add_prefix(name) not in self.data or cleaned.get(name) is None:
                cleaned[name] = Challenge._meta.get_field(name).get_default()
        if "slice_by" in self.fields and not cleaned.get("slice_by"):
            cleaned["slice_by"] = None  # an empty box: no slices
        present = {name: cleaned[name] for name in BOARD_FIELDS if cleaned.get(name) is not None}
        for field, message in board_errors(present).items():
            if field in self.fields and field not in self._errors:
                self.add_error(field, message)

        for name in RED_BLUE_FIELDS:
            if name in self.fields and name != "instructions" and cleaned.get(name) in (None, ""):
                cleaned[name] = getattr(self.instance, name)
        if "format" in self.fields:  # the red/blue settings, when the form shows them
            values = {n: cleaned.get(n, getattr(self.instance, n)) for n in RED_BLUE_FIELDS}
            plugin = plugin_touched(values, self.instance if self.instance.pk else None)
            for field, message in red_blue_errors(values, plugin=plugin).items():
                self.add_error(field if field in self.fields else None, message)
        if bad_text:
            return cleaned
        if not self.can_edit_scoring:
            self.setup = self.instance.setup_dict() if self.instance.pk else None
            return cleaned
        self.setup = self._clean_setup(cleaned)
        for field, message in self.probe_errors.items():
            if not self.for_preview and field in self.fields and field not in self._errors:
                self.add_error(field, message)
        if self.setup is not None and self.instance.pk and not self.for_preview:
            self.setup_changed = not setup_same(self.setup, self.instance.setup_dict())
            if (
                self.setup_changed
                and self.needs_confirmation
                and not cleaned.get("confirm_rescore")
            ):
                self.add_error(
                    "confirm_rescore",
                    f"This challenge has {self.attempt_count:,} attempts: tick the box to "
                    "confirm that all of them are rescored with the new setup.",
                )
        return cleaned

    def _used_fields(self, strategy: str, plugin: PluginChoice | None) -> set[str]:
        if strategy == strategies.CUSTOM:
            used = {"scoring_plugin_id", "scoring_entrypoint", "config_as_json", "scoring_config"}
            if plugin is not None:
                used |= {s.field_name(plugin.plugin_id) for s in plugin.weights}
            return used | {"scoring_strategy", "timeout_ms"}
        if strategy == strategies.PYTHON:
            used = {
                "scoring_code",
                "score_key",
                "lower_is_better",
                "metrics",
                "scoring_config",
                "rank_by",
            }
            used |= {
                n
                for n in self.fields
                if n.startswith((TEMPLATE_PREFIX, METRIC_PREFIX, admin_scorers.PREFIX))
            }
            return used | {"scoring_strategy", "timeout_ms"}
        return {"scoring_strategy"}

    def _clean_setup(self, cleaned: dict[str, Any]) -> dict[str, Any] | None:
        strategy = cleaned.get("scoring_strategy")
        plugin = self.plugins.get(cleaned.get("scoring_plugin_id") or "")
        # Inputs of the sections the chosen strategy hides are not the admin's concern.
        used = self._used_fields(strategy or "", plugin)
        for name in list(self._errors or {}):
            if name in self.scoring_field_names and name not in used and name != "confirm_rescore":
                del self._errors[name]
        if strategy is None:
            return None
        setup: dict[str, Any] = {
            "scoring_strategy": strategy,
            **copy.deepcopy(setup_services.EMPTY_SETUP),
            "timeout_ms": cleaned.get("timeout_ms"),
        }
        if strategy in strategies.BUILTIN:  # no scorer runs: the timeout is kept, not edited
            setup["timeout_ms"] = self.instance.timeout_ms if self.instance.pk else 5000
        elif strategy == strategies.CUSTOM:
            self._clean_plugin(cleaned, plugin, setup)
        elif strategy == strategies.PYTHON:
            self._clean_snippet(cleaned, setup)
        # The whole setup is checked even when an input is wrong already, so that every
        # error shows at once; an input's own error is not repeated.
        already = {name for name in self._errors or {} if name in used}  # before the check
        try:
            validated = setup_validate(setup=setup)
        except SetupInvalid as exc:
            for field, message in exc.errors.items():
                self._add_setup_error(field, message, plugin, strategy)
            return None
        return None if already else validated

    def _add_setup_error(
        self, field: str, message: str, plugin: PluginChoice | None, strategy: str
    ) -> None:
        """A ``setup_validate`` error on its input: config errors ("KEY: message; …") on
        the weight or template input of KEY, unless that input has its own error."""
        row_input = admin_scorers.error_field(field, self._scorer_rows_of)
        if row_input is not None:
            if row_input not in self._errors:
                self.add_error(row_input, message)
            return
        if field == "scorers":
            self.add_error(None, f"Scorers: {message}")
            return
        if field != "scoring_config":
            if field not in self._errors:
                self.add_error(field if field in self.fields else None, message)
            return
        for part in message.split("; "):
            key, sep, _ = part.partition(": ")
            unset = MISSING_VALUE.match(part)
            if (
                strategy == strategies.PYTHON
                and unset
                and f"{TEMPLATE_PREFIX}{unset[1]}" in self._errors
            ):
                continue  # said on the template input already ("The code uses …")
            if strategy == strategies.PYTHON:
                name = f"{TEMPLATE_PREFIX}{key}"
            elif plugin is not None and self._weights_used:
                name = f"{WEIGHT_PREFIX}{plugin.plugin_id}.{key}"
            else:
                name = ""
            if not (sep and name in self.fields):
                name = "scoring_config"
            if name not in self._errors or name == "scoring_config":
                self.add_error(name, part)

    def _clean_plugin(
        self, cleaned: dict[str, Any], plugin: PluginChoice | None, setup: dict[str, Any]
    ) -> None:
        plugin_id = cleaned.get("scoring_plugin_id") or ""
        entrypoint = cleaned.get("scoring_entrypoint") or ""
        other_plugin = plugin_id != self.initial.get("scoring_plugin_id")
        if other_plugin and entrypoint == self.initial.get("scoring_entrypoint"):
            entrypoint = ""  # the read-only input still shows the previous plugin's (no script)
        setup["scoring_plugin_id"], setup["scoring_entrypoint"] = plugin_id, entrypoint
        self._weights_used = bool(plugin and plugin.weights and not cleaned.get("config_as_json"))
        if plugin is not None and self._weights_used:
            setup["scoring_config"] = self._weights_config(cleaned, plugin)
            return
        config = cleaned.get("scoring_config")
        if config is not None and not isinstance(config, dict):
            self.add_error("scoring_config", 'Must be a JSON object, like {"key": 1}.')
        setup["scoring_config"] = {} if config is None else config

    def _weights_config(self, cleaned: dict[str, Any], plugin: PluginChoice) -> dict[str, Any]:
        """The config the weights form gives; an empty input leaves the option out (its
        default applies). Checked against the plugin's schema, each error on its input."""
        config: dict[str, Any] = {}
        for spec in plugin.weights:
            name = spec.field_name(plugin.plugin_id)
            if name in self._errors:
                continue
            value = cleaned.get(name)
            if value is None or value == "":
                continue
            if spec.choices:  # a select gives text: back to the schema's own value
                value = next((c for c in spec.choices if str(c) == value), value)
            config[spec.key] = value
        by_key = {s.key: s.field_name(plugin.plugin_id) for s in plugin.weights}
        try:
            validate_config(plugin.schema, config)
        except ConfigError as exc:
            for path, message in exc.errors.items():
                name = by_key.get(path.split(".")[0], "scoring_config")
                if name not in self._errors:  # the input's own error says it first
                    self.add_error(name, message)
        return config

    def _clean_snippet(self, cleaned: dict[str, Any], setup: dict[str, Any]) -> None:
        code = cleaned.get("scoring_code") or ""
        setup["scoring_code"] = code
        setup["score_key"] = (cleaned.get("score_key") or "").strip()
        setup["lower_is_better"] = bool(cleaned.get("lower_is_better"))
        # Kept as it is: only python challenges saved before issue 20 have it (API only).
        setup["sample_with_metrics"] = self._saved_python and self.instance.sample_with_metrics
        config = {}
        for field in self.template_fields():
            text = cleaned.get(field.name) or ""
            if text.strip():
                config[field.name[len(TEMPLATE_PREFIX) :]] = template_value(text)
        for key in placeholders(code):
            if key not in config:
                self.add_error(
                    f"{TEMPLATE_PREFIX}{key}",
                    f"The code uses << config.{key} >>: give it a value.",
                )
        setup["scoring_config"] = config
        setup["metrics"] = self._metrics(cleaned)
        scorers, self._scorer_rows_of = admin_scorers.clean_scorers(
            self, cleaned, self.scorer_row_count
        )
        if scorers:
            setup["scorers"] = scorers
            setup["rank_by"] = (cleaned.get("rank_by") or "").strip()

    def _metrics(self, cleaned: dict[str, Any]) -> list[dict[str, str]]:
        metrics = []
        for i in range(self.metric_row_count):
            values = {
                p: (cleaned.get(f"{METRIC_PREFIX}{i}.{p}") or "").strip() for p in METRIC_PARTS
            }
            if not any(values.values()):
                continue
            prefix = f"{METRIC_PREFIX}{i}."
            kind = values["type"]
            if not kind:
                self.add_error(prefix + "type", "Choose a type for this metric.")
                continue
            if not values["field"]:
                self.add_error(prefix + "field", "Name the score field it aggregates.")
                continue
            metric = {"type": kind, "field": values["field"]}
            if kind in LABELLED_METRICS:
                if not values["label"]:
                    self.add_error(prefix + "label", "Name the label field to compare with.")
                    continue
                metric["label"] = values["label"]
            metric["name"] = values["name"] or f"{kind}_{values['field']}"
            metrics.append(metric)
        return metrics
