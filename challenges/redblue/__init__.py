"""Red/blue challenges: red players attack, blue players defend, an external judge
decides each pairing per harm category (``policies`` pairs, ``services`` writes,
``selectors`` reads the standings; the points rule is ``scoring.engine.red_blue``)."""
