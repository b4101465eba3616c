"""A reproduction: one execution of a paper's recipe (simengine.reproductions) and what it found."""

from __future__ import annotations

from django.db import models

from gridweb.runs.models import FINISHED, Status
from gridweb.sharing import SharedModel


class Reproduction(SharedModel):
    """One run of recipe ``recipe`` (quick or full). ``claims`` are the recipe's claims
    (simengine.reproductions.COLUMNS as keys), ``figures`` its pages ({"file", "title"}), stored
    with its CSV files and claims.csv under ``location`` in the "results" storage."""

    recipe = models.CharField(max_length=40, db_index=True)
    quick = models.BooleanField(default=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0)  # fraction 0..1 of the current stage
    stage = models.CharField(max_length=200, blank=True)  # e.g. "runs: 12 of 20"
    log = models.TextField(blank=True)  # what the recipe printed
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    curated = models.BooleanField(default=False)  # the demo set's

    engine_version = models.CharField(max_length=32, blank=True)
    claims = models.JSONField(default=list, blank=True)
    tally = models.JSONField(default=dict, blank=True)  # {"PASS": n, "FAIL": n, "NOT REPRODUCIBLE": n}
    figures = models.JSONField(default=list, blank=True)
    files = models.JSONField(default=list, blank=True)  # every file the recipe wrote
    location = models.CharField(max_length=200, blank=True)

    class Meta(SharedModel.Meta):
        pass

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def command(self) -> str:
        return f"python -m simengine reproduce {self.recipe}" + (" --quick" if self.quick else "")
