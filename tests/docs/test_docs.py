"""docs/ is the project's contract: what it names must exist (every API route in the
OpenAPI schema, with its method), the tie rule is the code's sentence, and the README
links the docs, not a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from challenges.leaderboards.precision import SIGNIFICANT_DIGITS
from challenges.leaderboards.tie_rule import TIE_RULE
from tests.urls import schema_url

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ROUTE = re.compile(
    r"`((?:GET|POST|PATCH|PUT|DELETE)(?:/(?:GET|POST|PATCH|PUT|DELETE))*) (/api/[^`?\s]*)"
)


def doc_text() -> str:
    return "\n".join(p.read_text() for p in sorted(DOCS.glob("*.md")))


def documented_routes() -> set[tuple[str, str]]:
    routes = set()
    for methods, path in ROUTE.findall(doc_text() + (ROOT / "README.md").read_text()):
        for method in methods.split("/"):
            routes.add((method.lower(), path))
    return routes


@pytest.mark.django_db
def test_every_documented_route_is_in_the_openapi_schema(client):
    schema = client.get(schema_url()).json()
    routes = documented_routes()
    assert len(routes) >= 10  # the docs do name the API
    missing = sorted(f"{m.upper()} {p}" for m, p in routes if m not in schema["paths"].get(p, {}))
    assert not missing, f"named in docs/ or README.md but not in /api/schema/: {missing}"


@pytest.mark.django_db
def test_every_schema_route_is_documented(client):
    schema = client.get(schema_url()).json()
    routes = documented_routes()
    undocumented = sorted(
        f"{m.upper()} {p}"
        for p, ops in schema["paths"].items()
        for m in ops
        if m in ("get", "post", "patch", "put", "delete") and (m, p) not in routes
    )
    assert not undocumented, f"in /api/schema/ but not in docs/api.md: {undocumented}"


def test_docs_state_the_tie_rule_and_precision_as_the_code_does():
    text = re.sub(r"\s+", " ", doc_text())
    assert TIE_RULE in text
    assert f"{SIGNIFICANT_DIGITS} significant digits" in text.replace("**", "")


def test_readme_links_the_docs_and_every_docs_link_resolves():
    readme = (ROOT / "README.md").read_text()
    assert "../shared/DESIGN.md" not in readme
    assert "docs/README.md" in readme
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text()):
            assert (DOCS / target).exists(), f"{page.name} links {target}"


def test_readme_curl_example_creates_a_challenge_of_its_own_name():
    """The tour runs on the demo data: the example must not make a second challenge
    named like a demo one; and the legacy entrypoint it sends is explained."""
    from challenges.transfer.demo import DEMO_CHALLENGES

    readme = (ROOT / "README.md").read_text()
    created = re.findall(r"-d '\{\"name\": \"([^\"]+)\"", readme)
    assert created
    demo_names = {c["name"] for c in DEMO_CHALLENGES}
    assert not demo_names & set(created)
    if "services.scorers.weighted:WeightedScorer" in readme:
        assert "legacy spelling" in readme


# Files of a user's own project that the guides show (not this repository's).
USERS_FILES = {"tests/test_custom.py"}
PATH_MENTION = re.compile(
    r"\b((?:challenges|scoring|config|bench|deploy|tests|docs)/[\w/.-]+\.(?:py|md))\b"
)


def _mentioned_paths_missing(texts: dict[str, str]) -> list[str]:
    return sorted(
        f"{name}: {path}"
        for name, text in texts.items()
        for path in PATH_MENTION.findall(text)
        if not (ROOT / path).exists() and path not in USERS_FILES
    )


def test_every_path_the_code_and_docs_mention_exists():
    """A comment or a page naming a file that moved sends a reader nowhere."""
    texts = {
        str(path.relative_to(ROOT)): path.read_text()
        for folder in ("challenges", "scoring", "config", "docs", "bench", "deploy")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".md", ".conf", ".ini"} and "migrations" not in path.parts
    }
    texts["README.md"] = (ROOT / "README.md").read_text()
    texts["CONTRIBUTING.md"] = (ROOT / "CONTRIBUTING.md").read_text()
    assert _mentioned_paths_missing(texts) == []


def test_the_path_check_can_fail():
    assert _mentioned_paths_missing({"x.py": "# see challenges/ranking.py"}) == [
        "x.py: challenges/ranking.py"
    ]
