"""Everything a scenario can name, gathered in one place: the built-in policies (into the
registries of simengine.registry), the model packages' schema parts (their cross-field checks,
into simengine.schema_base.SCENARIO_CHECKS), then the policies of installed packages (the
``simengine.policies`` entry point group, after the built-in ones so they cannot shadow them).

simengine.scenario imports this module before it validates anything. A new built-in policy
module or schema part is one line here (docs/development.md, "Where things go").
"""
from __future__ import annotations

# (each import registers what its module defines)
import simengine.schedulers  # noqa: F401  local schedulers (compiled)
import simengine.site_allocation  # noqa: F401  site-allocation policies
import simengine.preemption  # noqa: F401  preemption policies and the built-in victim choice
import simengine.grid.schema  # noqa: F401  grid placement and deadline policies, the grid layer's checks
import simengine.grid.claiming  # noqa: F401  KOALA's claiming policies and their check
import simengine.evolving.schema  # noqa: F401  the evolving scheduler and its checks
import simengine.cao.schema  # noqa: F401  scojo-pect, workflow scheduling and Cao's checks
import simengine.local.schema  # noqa: F401  the event-driven model's checks (reservations, priorities, preemption)
import simengine.local.twins  # noqa: F401  the local built-ins again in plain Python (event API)
from simengine.policy import load_entry_points

load_entry_points()
