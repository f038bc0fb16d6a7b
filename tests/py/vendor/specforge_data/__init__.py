"""SpecForge specforge/data/{parse,template}.py @a6b6b023, vendored for tests/py/specforge_vs_exact.py."""
