"""The claims shipped in docs/reproductions/ come from this engine (issue 36: the claims CSVs
predated later engine commits and nothing checked them). Each full run's evidence is stored with
the claims of a quick run made by the same engine (simengine.reproductions.doc --from); the quick
recipes are run again here, and must give exactly those claims. When they do not, the engine's
results moved: run the full recipe again and store its evidence (docs/reproductions.md says how)."""
from __future__ import annotations

import pytest

from simengine.reproductions import RECIPES, get, read_claims, write_claims
from simengine.reproductions.doc import evidence, quick_evidence


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_shipped_claims_come_from_this_engine(name, tmp_path):
    assert evidence(name).exists() and quick_evidence(name).exists(), name
    stored = read_claims(quick_evidence(name))
    now = get(name)(tmp_path, quick=True, log=lambda _: None)
    moved = [(then.claim, then.measured, then.verdict, c.measured, c.verdict)
             for then, c in zip(stored, now) if (then.claim, then.measured, then.verdict) != (c.claim, c.measured, c.verdict)]
    assert len(now) == len(stored) and not moved, (
        f"{name}: the quick run no longer gives the claims stored with the full run's evidence -- the engine's "
        f"results moved, so {evidence(name).name} is stale. Run `python -m simengine reproduce {name} --out "
        f"DIR/{name}` and `python -m simengine.reproductions.doc --from DIR`. Moved: {moved[:3]}")


def test_a_moved_result_is_caught(tmp_path, monkeypatch):
    """The comparison can fail: stored quick claims of which one measurement differs."""
    import dataclasses

    import simengine.reproductions.doc as doc

    name = "cao"
    claims = read_claims(quick_evidence(name))
    claims[0] = dataclasses.replace(claims[0], measured=claims[0].measured + " (another engine)")
    evidence_dir = tmp_path / "evidence"
    evidence_dir.mkdir()
    (evidence_dir / evidence(name).name).write_bytes(evidence(name).read_bytes())
    monkeypatch.setattr(doc, "EVIDENCE", evidence_dir)
    write_claims(claims, quick_evidence(name))
    with pytest.raises(AssertionError, match="is stale"):
        test_the_shipped_claims_come_from_this_engine(name, tmp_path)
