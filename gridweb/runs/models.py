"""Runs of the engine, their streamed chunks and stored results, sweeps and comments."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from gridweb.sharing import SharedModel


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)
IDEMPOTENCY_KEY_LENGTH = 200


class Sweep(SharedModel):
    """A grid over scenario parameters; each point is one Run (``Run.sweep``)."""

    scenario = models.ForeignKey("scenarios.Scenario", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="sweeps")
    spec = models.JSONField()  # the base scenario document, as it was when the sweep started
    parameters = models.JSONField()  # {"dotted.path": [values, ...]}, see simengine.expand_sweep
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    aggregate = models.JSONField(default=list, blank=True)  # one row per point: values + metric CIs
    finished_at = models.DateTimeField(null=True, blank=True)
    # the client's Idempotency-Key of the request that created it: a retried request finds this sweep
    idempotency_key = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH, blank=True)

    class Meta(SharedModel.Meta):
        constraints = [models.UniqueConstraint(fields=["owner", "idempotency_key"], condition=~models.Q(idempotency_key=""),
                                               name="unique_sweep_idempotency_key")]


class Run(SharedModel):
    """One simulation of a scenario (a snapshot of it in ``spec``) and what it produced."""

    scenario = models.ForeignKey("scenarios.Scenario", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="runs")
    spec = models.JSONField()
    sweep = models.ForeignKey(Sweep, null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    sweep_point = models.JSONField(default=dict, blank=True)  # this run's parameter values in its sweep

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0)  # fraction 0..1
    sim_time = models.FloatField(default=0.0)  # simulated seconds reached
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Execution bookkeeping (gridweb.runs.execution): who runs it, when it should end, and the
    # delivery that owns it. ``attempt`` grows each time a worker (re)starts the run; writes of
    # an older attempt are ignored. ``heartbeat`` is refreshed while it runs, so a redelivered
    # task can tell a live execution from one whose worker died.
    worker = models.CharField(max_length=200, blank=True)  # e.g. "worker1@host" or "embedded@host:pid"
    eta = models.DateTimeField(null=True, blank=True)  # expected finish, from the progress so far
    attempt = models.PositiveIntegerField(default=0)
    heartbeat = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)  # last handed to a worker (recovery)
    curated = models.BooleanField(default=False)  # demo runs and reproduction recipes in the gallery

    # Reproducibility: scenario + seed + engine version identify the result.
    seed = models.BigIntegerField(null=True, blank=True)
    scenario_hash = models.CharField(max_length=64, blank=True)
    engine_version = models.CharField(max_length=32, blank=True)

    # Filled when done (denormalised for the gallery's search and cards).
    policy = models.CharField(max_length=200, blank=True, db_index=True)  # e.g. "easy" or "fcfs,lwr"
    platform = models.CharField(max_length=200, blank=True)  # e.g. "2 clusters, 96 processors"
    summary = models.JSONField(default=dict, blank=True)  # simengine Result.summary()
    thumbnail = models.TextField(blank=True)  # small inline SVG of the Gantt
    segments_count = models.PositiveIntegerField(default=0)
    last_seq = models.IntegerField(default=-1)  # highest chunk number stored
    # the client's Idempotency-Key of the request that created it: a retried request finds this run
    idempotency_key = models.CharField(max_length=IDEMPOTENCY_KEY_LENGTH, blank=True)

    class Meta(SharedModel.Meta):
        constraints = [models.UniqueConstraint(fields=["owner", "idempotency_key"], condition=~models.Q(idempotency_key=""),
                                               name="unique_run_idempotency_key")]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class RunChunk(models.Model):
    """One numbered chunk of a run's stream (simengine's on_progress chunks, ``seq`` from 0).

    Stored before it is broadcast, so a browser that joins late or reconnects replays
    exactly the chunks after the last ``seq`` it holds. A ``segments`` chunk keeps its rows as
    a binary frame (``data``, gridweb.runs.frames) and its header in ``payload``; ``rows`` and
    ``rows_before`` count the segments it and the chunks before it carry."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    seq = models.IntegerField()
    kind = models.CharField(max_length=16)
    payload = models.JSONField()
    data = models.BinaryField(null=True, blank=True)
    rows = models.PositiveIntegerField(default=0)
    rows_before = models.PositiveBigIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True, null=True)  # when the worker stored it

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_chunk_seq")]


class RunResult(models.Model):
    """Where a done run's result arrays are (gridweb.runs.result_store): the ``Result.write_npz``
    file and the Gantt's columns, under ``location`` in the "results" storage. ``npz`` holds the
    bytes of results stored before the storage existed (read as they are)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="result", primary_key=True)
    npz = models.BinaryField(null=True, blank=True)
    location = models.CharField(max_length=200, blank=True)
    size = models.PositiveBigIntegerField(default=0)


class Comment(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    text = models.TextField(max_length=5000)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created"]
