"""GridWeb example policies: shortest-job-first backfilling (docs/write-a-policy.md)."""
