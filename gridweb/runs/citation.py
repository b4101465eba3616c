"""How to cite a run (docs/gallery.md, "Cite a run"): what reproduces it -- the scenario hash, the
seed and the engine version -- with its address, as plain text and as a BibTeX entry."""
from __future__ import annotations

from typing import Any

import simengine

from .models import Run

#: characters BibTeX treats specially, with what stands for them in a field
_BIBTEX = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "&": r"\&", "#": r"\#", "_": r"\_",
           "$": r"\$", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def bibtex_escape(text: str) -> str:
    return "".join(_BIBTEX.get(ch, ch) for ch in text)


def author_of(run: Run) -> str:
    user = run.owner
    full = f"{user.first_name} {user.last_name}".strip()
    return full or user.username


def citation(run: Run, url: str) -> dict[str, Any]:
    """``text`` and ``bibtex`` citing ``run`` at ``url`` (its page's absolute address)."""
    year = run.created.year
    author = author_of(run)
    engine = run.engine_version or simengine.__version__
    what = (f"GridWeb simulation run #{run.pk}, engine {engine}, scenario {run.scenario_hash or 'unknown'}, "
            f"seed {run.seed if run.seed is not None else 'unknown'}")
    text = f"{author} ({year}). {run.name}. {what}. {url}"
    key = f"gridweb-run-{run.pk}"
    fields = [("author", author), ("title", run.name), ("year", str(year)), ("howpublished", f"\\url{{{url}}}"),
              ("note", what)]
    lines = [f"@misc{{{key},"]
    for name, value in fields:
        value = value if name == "howpublished" else bibtex_escape(value)
        lines.append(f"  {name} = {{{value}}},")
    lines.append("}")
    return {"text": text, "bibtex": "\n".join(lines) + "\n", "key": key,
            "readable_by_all": run.visibility == "public"}
