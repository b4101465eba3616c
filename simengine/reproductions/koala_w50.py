"""``python -m simengine reproduce koala-w50``: see :mod:`simengine.reproductions.koala`."""
from simengine.reproductions.koala import recipe_for

recipe = recipe_for(50)
