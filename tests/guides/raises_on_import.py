"""A plugin module that raises on import (a broken deployment, a missing dependency)."""

raise RuntimeError("boom at import: the plugin's dependency is missing")
