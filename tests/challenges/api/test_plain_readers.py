"""The plain path's readers are made from AttemptInSerializer's fields at import
(issue 27: one source per shape); what they cannot mirror stops the import."""

from __future__ import annotations

import pytest
from rest_framework import serializers as drf

from challenges.api import serializers
from challenges.api.fields import StrictCharField, StrictIntegerField
from challenges.models import MAX_METRIC


def test_the_readers_take_their_bounds_from_the_fields():
    fields = serializers.AttemptInSerializer._declared_fields
    assert serializers._ATTEMPT_KEYS == set(fields)
    assert serializers._ATTEMPT_REQUIRED == {"player", "succeeded"}
    read = serializers._ATTEMPT_READERS["player"][3]
    most = fields["player"].max_length
    assert read(" " + "p" * most + " ") == "p" * most
    assert read("p" * (most + 1)) is serializers._REFUSED
    read = serializers._ATTEMPT_READERS["tokens_total"][3]
    assert read(MAX_METRIC) == MAX_METRIC and read(MAX_METRIC + 1) is serializers._REFUSED


class _Unreadable(drf.Serializer):
    when = drf.DateField()


class _Validated(drf.Serializer):
    name = StrictCharField()

    def validate_name(self, value):
        return value


class _OwnValidator(drf.Serializer):
    count = StrictIntegerField(validators=[lambda value: None])


@pytest.mark.parametrize("shape", [_Unreadable, _Validated, _OwnValidator])
def test_a_shape_the_readers_cannot_mirror_is_refused(shape):
    with pytest.raises(TypeError, match="plain path"):
        serializers._plain_readers(shape)
