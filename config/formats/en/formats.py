"""One way to write times across Podium: the admin shows dates and times as the public
pages do (2026-01-31 14:05:09 UTC), not "Jan. 31, 2026, 2:05 p.m."."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
TIME_FORMAT = "H:i:s"
