"""Writes of collections: create one, set its member challenges. Audited like every
change of what players see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from challenges.audit import Kind, audit_record
from challenges.models import (
    MAX_COLLECTION_CHALLENGES,
    Challenge,
    Collection,
    CollectionMember,
    CollectionStrategy,
)
from challenges.text import unique_slug
from scoring.engine.protocol import FieldErrors


class CollectionInvalid(FieldErrors):
    """A collection the service refuses: ``errors`` maps each field to its message."""


def members_check(challenge_ids: Sequence[int]) -> list[int]:
    """The member ids, checked: 1 to MAX_COLLECTION_CHALLENGES known challenges, each
    once. Raises ``CollectionInvalid`` naming ``challenges``."""
    ids = list(challenge_ids)
    if not 1 <= len(ids) <= MAX_COLLECTION_CHALLENGES:
        raise CollectionInvalid(
            {"challenges": f"Give 1 to {MAX_COLLECTION_CHALLENGES} challenge ids, in order."}
        )
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise CollectionInvalid(
            {"challenges": f"Each challenge may appear once; repeated: {repeated}."}
        )
    known = set(Challenge.objects.filter(pk__in=ids).values_list("pk", flat=True))
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise CollectionInvalid({"challenges": f"Unknown challenge ids: {unknown}."})
    return ids


def collection_values(collection: Collection) -> dict[str, Any]:
    """What the audit trail keeps of a collection."""
    return {
        "collection": collection.pk,
        "name": collection.name,
        "slug": collection.slug,
        "strategy": collection.strategy,
        "challenges": list(
            collection.members.order_by("position", "id").values_list("challenge_id", flat=True)
        ),
    }


def _members_write(collection: Collection, ids: list[int]) -> None:
    CollectionMember.objects.filter(collection=collection).delete()
    CollectionMember.objects.bulk_create(
        CollectionMember(collection=collection, challenge_id=pk, position=n)
        for n, pk in enumerate(ids)
    )


@transaction.atomic
def collection_create(
    *,
    name: str,
    strategy: str = CollectionStrategy.SUM,
    challenge_ids: Sequence[int],
    slug: str = "",
    description: str = "",
    by: Any = None,
) -> Collection:
    """A new collection of these challenges, in this order."""
    if strategy not in CollectionStrategy.values:
        raise CollectionInvalid({"strategy": f"Unknown strategy {strategy!r}."})
    ids = members_check(challenge_ids)
    if slug and Collection.objects.filter(slug=slug).exists():
        raise CollectionInvalid({"slug": "A collection with this slug already exists."})
    collection = Collection.objects.create(
        name=name,
        slug=slug or unique_slug(name, Collection.objects.all(), "collection"),
        description=description,
        strategy=strategy,
    )
    _members_write(collection, ids)
    audit_record(kind=Kind.COLLECTION_CREATE, by=by, after=collection_values(collection))
    return collection


def collection_saved(
    *, collection: Collection, before: dict[str, Any] | None, by: Any = None
) -> None:
    """Record an edit made elsewhere (the admin's form and its member rows)."""
    after = collection_values(collection)
    if before is None:
        audit_record(kind=Kind.COLLECTION_CREATE, by=by, after=after)
    elif before != after:
        audit_record(kind=Kind.COLLECTION_EDIT, by=by, before=before, after=after)


@transaction.atomic
def collection_delete(*, collection: Collection, by: Any = None) -> None:
    before = collection_values(collection)
    collection.delete()
    audit_record(kind=Kind.COLLECTION_DELETE, by=by, before=before)
