"""Collections: a season's standings over several challenges, derived from the member
challenges' public boards (``standings`` ranks, ``selectors`` reads, ``services``
writes)."""
