"""Reproductions of the seed papers as gallery objects (docs/reproductions.md, "In the web").

Each is one run of a ``python -m simengine reproduce NAME`` recipe: its figures (the recipe's own
standalone Bokeh pages), its claims with verdicts, the command, engine version and seeds. A group
member re-runs one (quick or full) on the workers and watches its progress; the demo data holds
every paper's quick reproduction.
"""
