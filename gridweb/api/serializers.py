"""What the REST API reads and writes: scenarios, traces, runs, comments, sweeps.

Scenario documents are validated by the engine (``validate_spec``); its dotted field paths
come back under the request's own field, e.g. ``spec.platform.clusters.0.processors``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from gridweb.reproductions.models import Reproduction
from gridweb.runs.models import Comment, Run, RunChunk, Status, Sweep
from gridweb.scenarios.models import Scenario, TraceFile
from gridweb.scenarios import catalog, validation
from gridweb.scenarios.validation import SpecInvalid, UserLimitReached
from gridweb.sharing import MAX_TAG_LENGTH, MAX_TAGS, Visibility, default_group
from simengine.reproductions import RECIPES


def spec_errors(exc: SpecInvalid, field: str = "spec") -> dict[str, list[str]]:
    """The engine's errors keyed by their path inside the request body (``spec.<path>``)."""
    if isinstance(exc, UserLimitReached):
        return dict(exc.errors)
    return {f"{field}.{path}" if path else field: list(messages) for path, messages in exc.errors.items()}


class GroupField(serializers.SlugRelatedField):
    """A research group by name; only groups the requesting user belongs to."""

    def __init__(self, **kwargs):
        kwargs.setdefault("slug_field", "name")
        kwargs.setdefault("queryset", Group.objects.all())
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        group = super().to_internal_value(data)
        user = self.context["request"].user
        if not user.is_superuser and not user.groups.filter(pk=group.pk).exists():
            raise serializers.ValidationError(f"you are not a member of the group {group.name!r}")
        return group


class SharingSerializer(serializers.ModelSerializer):
    """Fields every shared object has: owner (read-only), group, visibility, name, tags ..."""

    owner = serializers.CharField(source="owner.username", read_only=True)
    group = GroupField(help_text="research group (by name) that 'group' visibility shares with; "
                                 "default: your first group")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)
    tags = serializers.ListField(child=serializers.CharField(max_length=MAX_TAG_LENGTH), max_length=MAX_TAGS, required=False)
    can_edit = serializers.SerializerMethodField(help_text="whether you may change or delete it")

    SHARING_FIELDS = ("id", "name", "description", "tags", "owner", "group", "visibility", "can_edit",
                      "created", "updated")

    def get_can_edit(self, obj) -> bool:
        return obj.can_edit(self.context["request"].user)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        group = attrs.get("group", getattr(self.instance, "group", None))
        if "group" not in attrs and self.instance is None:
            group = attrs["group"] = default_group(self.context["request"].user)
        visibility = attrs.get("visibility", getattr(self.instance, "visibility", Visibility.PRIVATE))
        if visibility == Visibility.GROUP and group is None:
            raise serializers.ValidationError({"group": ["'group' visibility needs a research group"]})
        return attrs


# --- Scenarios ------------------------------------------------------------------------------------


@extend_schema_field(catalog.spec_schema())
class SpecField(serializers.JSONField):
    """A scenario document; its OpenAPI schema names the registered policies."""


class ScenarioSerializer(SharingSerializer):
    spec = SpecField(help_text="the engine's scenario document (docs/scenario.md)")
    forked_from = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = Scenario
        fields = (*SharingSerializer.SHARING_FIELDS, "spec", "forked_from")
        read_only_fields = ("created", "updated")

    def validate_spec(self, spec: Any) -> Any:
        """The engine checks the document; its paths come back under ``spec.`` (with the other
        fields' errors, as field validation collects them all)."""
        try:
            engine_scenario = validation.validate_spec(spec, self.context["request"].user)
        except validation.SpecInvalid as exc:
            raise serializers.ValidationError({path or "": messages for path, messages in exc.errors.items()}) \
                from exc
        self.engine_name = engine_scenario.name
        return spec

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if "spec" in attrs and not attrs.get("name") and self.instance is None:
            attrs["name"] = getattr(self, "engine_name", None) or "scenario"
        return attrs

    def get_fields(self):
        fields = super().get_fields()
        fields["name"].required = False  # taken from the scenario document when absent
        return fields


class ScenarioListSerializer(ScenarioSerializer):
    class Meta(ScenarioSerializer.Meta):
        fields = SharingSerializer.SHARING_FIELDS + ("forked_from",)


class SpecSerializer(serializers.Serializer):
    """A scenario document to check: ``{"spec": {...}}``."""

    spec = serializers.JSONField()


class ValidationResultSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    scenario_hash = serializers.CharField()
    scenario = serializers.JSONField(help_text="the document as the engine validated it, defaults filled in")


class ForkSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, help_text="default: '<name> (fork)'")


# --- Traces ---------------------------------------------------------------------------------------


class TraceFileSerializer(SharingSerializer):
    class Meta:
        model = TraceFile
        fields = (*SharingSerializer.SHARING_FIELDS, "stored_name", "original_name", "format", "size", "sha256",
                  "jobs", "max_processors", "metadata")
        read_only_fields = ("created", "updated", "stored_name", "original_name", "format", "size", "sha256",
                            "jobs", "max_processors", "metadata")


class TraceUploadSerializer(serializers.Serializer):
    """Multipart upload; the file is checked by ``store_trace`` (size limit, engine reader)."""

    file = serializers.FileField(help_text="an SWF or GWF trace, plain or gzipped (.swf, .gwf, .swf.gz, .gwf.gz)")
    format = serializers.ChoiceField(choices=["swf", "gwf"], required=False,
                                     help_text="default: from the file name")
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)
    group = GroupField()


# --- Runs -----------------------------------------------------------------------------------------


class RunSerializer(SharingSerializer):
    """A run as listed: status, progress and what identifies its result."""

    scenario = serializers.PrimaryKeyRelatedField(read_only=True)
    sweep = serializers.PrimaryKeyRelatedField(read_only=True)
    eta_seconds = serializers.SerializerMethodField(help_text="estimated seconds until done (running runs)")

    class Meta:
        model = Run
        fields = (*SharingSerializer.SHARING_FIELDS, "status", "progress", "sim_time", "eta", "eta_seconds", "error",
                  "started_at", "finished_at", "scenario", "sweep", "sweep_point", "seed", "scenario_hash",
                  "engine_version", "policy", "platform", "curated", "segments_count", "last_seq", "worker")
        read_only_fields = ("created", "updated", "status", "progress", "sim_time", "eta", "error", "started_at",
                            "finished_at", "sweep_point", "seed", "scenario_hash", "engine_version", "policy",
                            "platform", "curated", "segments_count", "last_seq", "worker")
        extra_kwargs = {"worker": {"help_text": "the worker process that ran (or is running) the run, e.g. "
                                                "'worker1@host' (Celery) or 'embedded@host:pid'; empty while queued"}}

    def get_eta_seconds(self, run: Run) -> float | None:
        """Seconds until the worker's expected finish (``eta``, from the pace of its progress:
        gridweb.runs.execution.EtaEstimate). None while queued or while estimating; 0 once done."""
        if run.status == Status.DONE:
            return 0.0
        if run.status != Status.RUNNING:
            return None
        if run.eta is not None:
            return max(0.0, (run.eta - timezone.now()).total_seconds())
        return None  # estimating: the worker's progress has no settled pace yet (execution.EtaEstimate)


class RunDetailSerializer(RunSerializer):
    """A run with its scenario document, summary (job counts, ...) and metrics with CIs."""

    spec = serializers.JSONField(read_only=True)
    summary = serializers.JSONField(read_only=True)
    metrics = serializers.SerializerMethodField()
    exports = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = (*RunSerializer.Meta.fields, "spec", "summary", "metrics", "exports")

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_metrics(self, run: Run) -> dict[str, Any]:
        return (run.summary or {}).get("metrics", {})

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string", "format": "uri"}})
    def get_exports(self, run: Run) -> dict[str, str]:
        """Download links (present once the run is done)."""
        if run.status != Status.DONE:
            return {}
        request = self.context["request"]
        names = ("jobs.csv", "schedule.swf", "batsim_jobs.csv", "scenario.json", "metrics.json", "segments/")
        return {name: request.build_absolute_uri(f"/api/runs/{run.pk}/{name}") for name in names}


class RunCreateSerializer(serializers.Serializer):
    """Start a run of a scenario document (``spec``) or of a saved scenario (``scenario`` id)."""

    spec = SpecField(required=False, help_text="a scenario document (docs/scenario.md)")
    scenario = serializers.IntegerField(required=False, help_text="id of a saved scenario you may view")
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(max_length=MAX_TAG_LENGTH), max_length=MAX_TAGS, required=False)
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)
    group = GroupField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        user = self.context["request"].user
        if ("spec" in attrs) == ("scenario" in attrs):
            raise serializers.ValidationError({"spec": ["give either 'spec' or 'scenario', not both or neither"]})
        if "scenario" in attrs:
            scenario = Scenario.objects.visible_to(user).filter(pk=attrs["scenario"]).first()
            if scenario is None:
                raise serializers.ValidationError(
                    {"scenario": [f"no scenario with id {attrs['scenario']} that you may view"]})
            attrs["scenario"], attrs["spec"] = scenario, scenario.spec
        if "group" not in attrs:
            attrs["group"] = default_group(user)
        if attrs["visibility"] == Visibility.GROUP and attrs["group"] is None:
            raise serializers.ValidationError({"group": ["'group' visibility needs a research group"]})
        return attrs


class SweepCreateSerializer(RunCreateSerializer):
    """A parameter sweep: every point of the cartesian product of ``parameters`` is one run."""

    parameters = serializers.DictField(
        child=serializers.ListField(allow_empty=False),
        help_text='{"dotted.path": [values, ...]}, e.g. {"run.seed": [1, 2, 3]} (docs/output.md, "Sweeps")')


class RunChunkSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunChunk
        fields = ("seq", "kind", "payload")


class ChunksResponseSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.CharField()
    last_seq = serializers.IntegerField()
    more = serializers.BooleanField(help_text="more chunks after these are stored; ask again with ?after=")
    chunks = serializers.ListField(child=serializers.DictField(),
                                   help_text="the engine's chunks as streamed (seq, kind, ...)")


class SegmentsResponseSerializer(serializers.Serializer):
    columns = serializers.DictField(child=serializers.ListField(),
                                    help_text="cluster, first_processor, processors, t0, t1, job, component, "
                                              "kind, cluster_name, job_id, kind_name")
    rows = serializers.IntegerField()



class JobStreamSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="the stream's index (the jobs' stream column)")
    name = serializers.CharField()


class JobsPageSerializer(serializers.Serializer):
    """A page of a done run's job rows (gridweb/runs/jobs_table.py; the run page's jobs.json)."""

    columns = serializers.ListField(child=serializers.CharField(), help_text="column names, in row order")
    descriptions = serializers.DictField(child=serializers.CharField(), help_text="column -> meaning and unit")
    model_columns = serializers.ListField(child=serializers.CharField(),
                                          help_text="the columns of the run's model beyond the standard ones")
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()),
                                 help_text="one list per job in column order; null where a value is empty "
                                           "(never started, not ended, rejected)")
    total = serializers.IntegerField(help_text="rows after the filters (all pages)")
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    replication = serializers.IntegerField()
    replications = serializers.ListField(child=serializers.IntegerField())
    statuses = serializers.ListField(child=serializers.CharField())
    streams = JobStreamSerializer(many=True, help_text="the streams the replication's jobs are in")

# --- Comments and sweeps --------------------------------------------------------------------------


class CommentSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True)
    text = serializers.CharField(max_length=5000, allow_blank=False, trim_whitespace=True)

    class Meta:
        model = Comment
        fields = ("id", "author", "text", "created")
        read_only_fields = ("created",)


class SweepSerializer(SharingSerializer):
    scenario = serializers.PrimaryKeyRelatedField(read_only=True)
    runs_total = serializers.IntegerField(read_only=True, source="runs.count")

    class Meta:
        model = Sweep
        fields = (*SharingSerializer.SHARING_FIELDS, "scenario", "parameters", "status", "finished_at",
                  "runs_total")
        read_only_fields = ("created", "updated", "parameters", "status", "finished_at")


class SweepDetailSerializer(SweepSerializer):
    spec = serializers.JSONField(read_only=True)
    aggregate = serializers.JSONField(read_only=True, help_text="one row per point: its values and metric CIs")
    runs = serializers.SerializerMethodField()

    class Meta(SweepSerializer.Meta):
        fields = (*SweepSerializer.Meta.fields, "spec", "aggregate", "runs")

    @extend_schema_field(RunSerializer(many=True))
    def get_runs(self, sweep: Sweep) -> list[dict[str, Any]]:
        user = self.context["request"].user
        runs = sweep.runs.visible_to(user).select_related("owner", "group").order_by("pk")
        return RunSerializer(runs, many=True, context=self.context).data


# --- Reproductions --------------------------------------------------------------------------------


class ReproductionSerializer(SharingSerializer):
    """A reproduction of a seed paper (gridweb.reproductions): its recipe, state and claim counts."""

    command = serializers.CharField(read_only=True, help_text="the command line that gives the same numbers")
    tally = serializers.DictField(child=serializers.IntegerField(), read_only=True,
                                  help_text="claims per verdict: PASS, FAIL, NOT REPRODUCIBLE")

    class Meta:
        model = Reproduction
        fields = (*SharingSerializer.SHARING_FIELDS, "recipe", "quick", "status", "progress", "stage", "error",
                  "engine_version", "command", "tally", "started_at", "finished_at", "curated")
        read_only_fields = fields


class ReproductionDetailSerializer(ReproductionSerializer):
    claims = serializers.ListField(child=serializers.DictField(), read_only=True,
                                   help_text="claim, paper, measured, verdict, reason, fit, reading, construction, "
                                             "marks")
    files = serializers.SerializerMethodField(help_text="every file the recipe wrote: name and address")
    figures = serializers.ListField(child=serializers.DictField(), read_only=True,
                                    help_text="the standalone Bokeh pages: file and title")
    log = serializers.CharField(read_only=True)

    class Meta(ReproductionSerializer.Meta):
        fields = (*ReproductionSerializer.Meta.fields, "claims", "figures", "files", "log")
        read_only_fields = fields

    def get_files(self, rep: Reproduction) -> list[dict[str, str]]:
        request = self.context["request"]
        return [{"name": name, "url": request.build_absolute_uri(reverse("api:reproduction-file", args=[rep.pk, name]))}
                for name in rep.files]


class ReproductionCreateSerializer(serializers.Serializer):
    """Re-run a paper's reproduction on the workers (one queued or running per user)."""

    recipe = serializers.ChoiceField(choices=list(RECIPES), help_text="the paper: a name of "
                                     "`python -m simengine reproduce`")
    quick = serializers.BooleanField(default=True, help_text="few, short replications (seconds); false: the "
                                                             "full run that stands for the paper (minutes)")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)
    group = GroupField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "group" not in attrs:
            attrs["group"] = default_group(self.context["request"].user)
        if attrs["visibility"] == Visibility.GROUP and attrs["group"] is None:
            raise serializers.ValidationError({"group": ["'group' visibility needs a research group"]})
        return attrs
