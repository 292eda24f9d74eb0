"""Podium settings: one file, driven by the environment.

Every value has an embedded default that works on a fresh machine (SQLite, a filesystem
Celery broker under var/). The helpers fail loudly on a malformed value instead of
guessing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PODIUM_VAR_DIR", BASE_DIR / "var"))
# The SQLite file and the embedded broker live here (made at start-up: config/paths.py).


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false).")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, above: float = 0.0) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if not value > above or value == float("inf"):
        raise ImproperlyConfigured(f"{name}={value} must be a finite number above {above:g}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_json_dict(name: str, default: dict[str, str]) -> dict[str, str]:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ImproperlyConfigured(f'{name} must be a JSON object {{"id": "module:Class"}}.')
    return value


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as ``600/min``; checked here, not at the first request."""
    value = os.environ.get(name) or default
    count, _, period = value.partition("/")
    if (
        not count.isdigit()
        or int(count) < 1
        or period not in {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}
    ):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate like 600/min or 20/s.")
    return value


def env_secret(name: str) -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/systemd
    credentials); setting both is ambiguous and refused."""
    value = os.environ.get(name, "")
    path = os.environ.get(f"{name}_FILE", "")
    if value and path:
        raise ImproperlyConfigured(f"Set {name} or {name}_FILE, not both.")
    if path:
        try:
            value = Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from None
        if not value:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} is empty.")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}.")
    return value


# development (the default: `make run`, `make test`) or production (behind a real host
# name, over HTTPS). Production turns DEBUG off by default and requires a secret key and
# the host names; every security setting below follows from it and may be overridden.
PODIUM_ENV = env_choice("PODIUM_ENV", "development", ("development", "production"))
PRODUCTION = PODIUM_ENV == "production"
DEBUG = env_bool("DEBUG", not PRODUCTION)
SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION or not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY (or SECRET_KEY_FILE) must be set in production or when DEBUG is off; "
            'generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    SECRET_KEY = "insecure-dev-key-only-for-local-use"  # noqa: S105 - development only
elif PRODUCTION and len(SECRET_KEY) < 50:
    raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters in production.")
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name the site's host(s) in production.")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS and cookies (production defaults; each can be overridden) ----------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", PRODUCTION)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto: set SECURE_PROXY_SSL_HEADER=true.
# Only then: a client could otherwise claim HTTPS by sending the header itself.
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Exempt from the HTTPS redirect: the load balancer's health probe speaks plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our static files, not a CDN
    "csp",
    "axes",
    "scoring",
    "challenges",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.BodySizeLimitMiddleware",
    "config.middleware.TransientErrorMiddleware",  # 503 + Retry-After, not 500
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "challenges.audit.AuditViaMiddleware",  # changes made here: via api or admin
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers a locked-out login itself
]

# --- Content-Security-Policy: only our own scripts, styles, images and fonts --------
# No inline script or style anywhere (templates keep code in static/js, CSS in
# static/css); the Swagger UI uses drf-spectacular's split view for the same reason.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# --- Login guessing: django-axes locks a username + address after repeated failures --
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "config.auth.PermissionsBackend",  # ModelBackend in one statement
]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("AXES_COOLOFF_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Proxies in front that append to X-Forwarded-For (0: use the connection's address).
AXES_IPWARE_PROXY_COUNT = env_int("AXES_PROXY_COUNT", 0)
AXES_VERBOSE = False

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: SQLite by default, anything dj-database-url understands otherwise ----
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'podium.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:  # unknown scheme and the like
    raise ImproperlyConfigured(f"DATABASE_URL is not usable: {exc}") from None
# A connection kept between requests (CONN_MAX_AGE) is checked before its first use in a
# request: after a database restart, the first request reconnects instead of failing.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The same backend, with a health check that polls the socket instead of a round
    # trip per request (config/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # IMMEDIATE: a write transaction takes the write lock up front, so concurrent
        # writers (web + worker) wait their turn instead of failing with "locked".
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": env_str("SQLITE_TEST_NAME", "") or None}
# Behind PgBouncer in transaction pooling (deploy/pgbouncer.ini), a session lasts one
# transaction: no server-side cursors (Django's iterator() would declare them outside a
# transaction) and no prepared statements (psycopg prepares a query run five times).
# Podium's locks and settings are transaction-level already (leaderboards/sql.py).
PODIUM_DATABASE_POOLER = env_choice("PODIUM_DATABASE_POOLER", "none", ("none", "pgbouncer"))
if PODIUM_DATABASE_POOLER == "pgbouncer":
    if DATABASES["default"]["ENGINE"] != "config.postgresql":
        raise ImproperlyConfigured(
            "PODIUM_DATABASE_POOLER=pgbouncer needs a postgres:// DATABASE_URL"
        )
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Dates and times written one way everywhere (config/formats/en/formats.py).
FORMAT_MODULE_PATH = ["config.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production: `collectstatic` writes compressed, content-hashed files and WhiteNoise
    # serves them with far-future cache headers. Development serves static/ as it is.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Cache: API throttles and rendered fragments. One process: local memory; several
# web processes (gunicorn) share counters only through Redis: set CACHE_URL=redis://…
CACHE_URL = env_str("CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {"default": {"BACKEND": "config.cache.RedisCache", "LOCATION": CACHE_URL}}
elif CACHE_URL in ("", "locmem://"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
else:
    raise ImproperlyConfigured(f"CACHE_URL={CACHE_URL!r}: use redis://host:port/db or unset it.")

# --- Request limits ----------------------------------------------------------------
# A request body over this many bytes is refused with 413 before it is read.
PODIUM_MAX_BODY_BYTES = env_int("PODIUM_MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = PODIUM_MAX_BODY_BYTES

# --- API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.auth.TokenAuthentication",  # DRF's, in one statement
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Deny by default: every view states who may use it (challenges/api/views.py).
    "DEFAULT_PERMISSION_CLASSES": ["challenges.permissions.DenyAll"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # A 404 says "Not found.", never which model was looked up (config/errors.py).
    "EXCEPTION_HANDLER": "config.errors.api_exception",
    # JSON only: every field is strictly typed, which form encodings cannot express.
    "DEFAULT_PARSER_CLASSES": ["challenges.api.parsers.SafeJSONParser"],
    # Recording attempts is limited per token (429 with Retry-After); see challenges.api.throttles.
    "DEFAULT_THROTTLE_RATES": {"attempts": env_rate("PODIUM_ATTEMPTS_RATE", "600/min")},
    # DRF's, answering a request without Accept (or */*) without parsing (config/negotiation.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.negotiation.ContentNegotiation",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Podium API",
    "DESCRIPTION": "Challenges, attempts and leaderboards with pluggable scoring.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Red/blue's two policy fields share one choice set: one component for both; and one
    # name for the event types (webhooks' "events" and a delivery's event "type").
    "ENUM_NAME_OVERRIDES": {
        "SelectionPolicyEnum": "challenges.redblue.policies.POLICIES",
        "EventTypeEnum": "challenges.models.Event.Type",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "challenges.api.schema.error_responses",
        "challenges.api.schema.public_view_and_ids",
    ],
}

# --- Podium -----------------------------------------------------------------------
# Extra scorer plugins: {"plugin_id": "module:Class"} (JSON in the environment).
SCORING_PLUGINS = env_json_dict("SCORING_PLUGINS", {})
PODIUM_MAX_ATTEMPTS_PER_REQUEST = env_int("PODIUM_MAX_ATTEMPTS_PER_REQUEST", 1000, minimum=1)
# How long an attempts request may spend scoring inline (milliseconds). Attempts not
# scored by then are stored, answered with score_status "pending", and scored by the
# Celery workers. 0: every plugin or snippet attempt is scored by the workers.
PODIUM_SCORING_BUDGET_MS = env_int("PODIUM_SCORING_BUDGET_MS", 3000, minimum=0)
# A task scoring pending attempts works this long, then queues the rest behind whatever
# else is waiting: one challenge's backlog of slow attempts takes turns with the others.
PODIUM_PENDING_SLICE_MS = env_int("PODIUM_PENDING_SLICE_MS", 2000, minimum=1)
# Public leaderboards: how long page checkpoints may lag new attempts under steady
# ingestion (0: recompute on the first read after any change). An attempt after a quiet
# spell this long is shown on the next read.
PODIUM_RANKING_MAX_AGE_MS = env_int("PODIUM_RANKING_MAX_AGE_MS", 1000)
# What readers are served is kept in the cache and, for a second, in each process too
# (docs/caching.md); false keeps it in the cache only (a benchmark's "without").
PODIUM_KEPT_LOCAL = env_bool("PODIUM_KEPT_LOCAL", True)
# The most attempts per rescore task. A job is split into about 16 tasks (so several
# workers share it and progress moves), of at least 1,000 attempts (so per-task costs
# stay small) and at most this many.
PODIUM_SCORING_CHUNK = env_int("PODIUM_SCORING_CHUNK", 20_000, minimum=1)
# Batch scorers (python_batch): a run starts this long after the first attempt that
# needs one, so a burst of attempts costs one run; and the most attempts one run takes.
PODIUM_BATCH_DEBOUNCE_MS = env_int("PODIUM_BATCH_DEBOUNCE_MS", 2000)
PODIUM_BATCH_MAX_ATTEMPTS = env_int("PODIUM_BATCH_MAX_ATTEMPTS", 50_000, minimum=1)
# Idempotency-Key of attempt POSTs: how long a key's first response is kept (>= 24 h).
PODIUM_IDEMPOTENCY_KEEP_H = env_int("PODIUM_IDEMPOTENCY_KEEP_H", 48, minimum=24)
# Rescore watchdog: a queued or running job with no progress for this many seconds is
# resumed (its unfinished chunks sent again); it looks every PODIUM_WATCHDOG_EVERY_S.
PODIUM_RESCORE_STALL_S = env_int("PODIUM_RESCORE_STALL_S", 60, minimum=1)
PODIUM_WATCHDOG_EVERY_S = env_int("PODIUM_WATCHDOG_EVERY_S", 15, minimum=1)
# Scores of a version neither active nor kept (challenges/leaderboards/partitions.py)
# are dropped by the watchdog once the version was made, or its last job ended, this
# many seconds ago (PostgreSQL; SQLite keeps every version's scores).
PODIUM_SCORES_KEEP_S = env_int("PODIUM_SCORES_KEEP_S", 3600, minimum=0)
# Webhooks (challenges/events/webhook_delivery.py): an endpoint whose host resolves to a private,
# loopback or link-local address is refused unless this is set (development, tests).
PODIUM_WEBHOOK_ALLOW_PRIVATE = env_bool("PODIUM_WEBHOOK_ALLOW_PRIVATE", False)
# Multiplies the retry schedule (10 s, 1 min, 5 min, … 3 h); below 1 only to try it out.
PODIUM_WEBHOOK_RETRY_SCALE = env_float("PODIUM_WEBHOOK_RETRY_SCALE", 1.0)
# The event stream (GET /challenges/<slug>/events/): a comment this often on a quiet
# stream, so that proxies and browsers keep it open.
PODIUM_SSE_HEARTBEAT_S = env_float("PODIUM_SSE_HEARTBEAT_S", 15.0)
# How often the events tick runs: opened, closed and frozen are announced within it.
PODIUM_EVENTS_TICK_S = env_int("PODIUM_EVENTS_TICK_S", 15, minimum=1)

# --- Celery ---------------------------------------------------------------------
# Embedded default: a filesystem broker under var/, shared by `make run`'s web process
# and its worker; no server to install. Set CELERY_BROKER_URL=redis://… to scale out.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost//")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "celery-broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        # kombu's default is ./control, relative to wherever the process started.
        "control_folder": str(VAR_DIR / "celery-control"),
        "processed_folder": str(VAR_DIR / "celery-processed"),
        "store_processed": False,
    }
elif CELERY_BROKER_URL.split("://", 1)[0].lower() in ("redis", "rediss"):
    # kombu's Redis transport with a guard that keeps a worker alive through a broker
    # outage (config/broker.py says what it guards and when to remove it).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The periodic watchdog (run by `celery beat`: the Procfile's beat process, or the
# worker's embedded beat (-B) that `make run` starts).
CELERY_BEAT_SCHEDULE = {
    "rescore-watchdog": {
        "task": "challenges.tasks.rescore_watchdog",
        "schedule": float(PODIUM_WATCHDOG_EVERY_S),
        "options": {"expires": float(PODIUM_WATCHDOG_EVERY_S)},
    },
    # Events (challenges/events/): schedule moments announced within 30 s, a look at
    # every board whose look was lost.
    "events-tick": {
        "task": "challenges.tasks.events_tick",
        "schedule": float(PODIUM_EVENTS_TICK_S),
        "options": {"expires": float(PODIUM_EVENTS_TICK_S)},
    },
    "idempotency-purge": {
        "task": "challenges.tasks.idempotency_purge",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = env_str(
    "CELERY_BEAT_SCHEDULE_FILENAME", str(VAR_DIR / "celerybeat-schedule")
)
# The worker logs through LOGGING below (text or JSON lines), like the web process.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

LOG_FORMAT = env_choice("LOG_FORMAT", "text", ("text", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"()": "config.logging.TextFormatter"},
        "json": {"()": "config.logging.json_formatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # django-axes narrates every login at INFO; its lockouts are warnings.
    "loggers": {"axes": {"level": "WARNING"}},
}
