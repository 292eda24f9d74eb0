"""The scoring engine: plain Python, no Django, no project imports.

It can be unit-tested, benchmarked and run in an isolated process on its own.
Public surface:

- ``protocol``: the types of docs/scorers.md (AttemptMetrics, ScoringContext, ScoringResult,
  ScorerProtocol) and the errors a plugin may raise;
- ``strategies``: the four built-in strategies and the ranking direction of each;
- ``registry``: the plugin registry (built-ins, entry points, settings, aliases);
- ``config``: validation of a plugin's config against its ``config_schema``;
- ``runner``: runs a scorer over attempts and applies every failure rule.
"""
