"""The co-allocation grid layer: global jobs with start deadlines over FCFS clusters.

Ballier, Caron, Epema, Mohamed (INRIA RR-5815, 2006), MODELS.md §3: C clusters, each
with a strict FCFS local scheduler fed by its own Poisson stream of local jobs, and a
grid scheduler that places global co-allocated jobs (components of equal size that must
all start at the job's start deadline D) with Worst-Fit, the Repeated Placement Policy
(claiming processors at a successful try), Wait-X, and GP (kill local jobs at D) or LP.

Modules: :mod:`~simengine.grid.schema` (scenario fields and policy parameters),
:mod:`~simengine.grid.kernel` (the compiled event loop), :mod:`~simengine.grid.model`
(arrays in, outcome out: the API tests and recipes call), :mod:`~simengine.grid.run`
(scenario -> :class:`~simengine.results.Result`). Reference: docs/grid.md.

Nothing is imported here: :mod:`simengine.scenario` imports the schema while it is
itself being imported.
"""
