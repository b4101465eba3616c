"""Scenarios (the engine's scenario document plus sharing) and uploaded workload traces."""

from __future__ import annotations

from django.db import models

from gridweb.sharing import SharedModel


class Scenario(SharedModel):
    """A saved scenario. ``spec`` is the engine's scenario document (see docs/scenario.md),
    always valid under ``simengine``'s schema when saved through the builder or the API."""

    spec = models.JSONField()
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")

    class Meta(SharedModel.Meta):
        pass


class TraceFile(SharedModel):
    """An uploaded (or shipped demo) SWF/GWF trace.

    The bytes live in the database so that workers on other machines can run scenarios
    that use it; ``stored_name`` is the file name scenarios use as a trace stream's
    ``path`` (resolved inside ``settings.GRIDWEB_TRACE_DIR``, never anywhere else).
    """

    FORMATS = [("swf", "SWF"), ("gwf", "GWF"), ("batsim", "Batsim workload (JSON)")]

    stored_name = models.CharField(max_length=255, unique=True)
    original_name = models.CharField(max_length=255)
    format = models.CharField(max_length=6, choices=FORMATS)
    content = models.BinaryField()  # the file as uploaded (plain or gzip)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    jobs = models.PositiveIntegerField(default=0)
    max_processors = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)  # header comments, skipped/rejected counts

    class Meta(SharedModel.Meta):
        pass
