"""GridWeb example policies: shortest-job-first backfilling, Best-Fit placement, round-robin site
allocation (docs/write-a-policy.md)."""
# A worked policy package (docs/write-a-policy.md): installed into a GridWeb environment, its
# policies appear in `python -m simengine schedulers`, the scenario builder and the API schema.
