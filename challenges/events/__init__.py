"""Events: what happened to a challenge's public board, in one vocabulary for the event
stream and webhooks (docs/events.md).

``log``: the durable log (``Event``) and its JSON shape; ``board``: the public top 10
compared with what was last seen (first blood, a new #1, a changed top 10), coalesced to
one look per second per challenge; ``moments``: the schedule (opened, closed, frozen),
the reveal and the end of a rescore. Every event follows what the public may see.
"""
