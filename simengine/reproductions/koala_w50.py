"""Mohamed's thesis, §5.1, workload W50: KOALA's placement and claiming with KOALA jobs at 50% load.
``python -m simengine reproduce koala-w50``; the experiment is :mod:`simengine.reproductions.koala`."""
from simengine.reproductions.koala import recipe_for

recipe = recipe_for(50)
