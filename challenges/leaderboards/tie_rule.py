"""The ranking rule in words: one sentence, said the same way by the README, the docs,
the challenge page's legend and the API schema (a test holds them to it)."""

TIE_RULE = (
    "Equal values: the earlier attempt (created_at) ranks first; only attempts equal in "
    "both value and time share a rank (1, 2, 2, 4), shown as =2."
)
