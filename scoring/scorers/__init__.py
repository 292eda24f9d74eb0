"""Scorer plugins shipped with Podium (plain Python, no Django)."""
