"""The REST API: everything the pages do, for scripts (docs/api.md).

Every view starts from ``Model.objects.visible_to(user)``, so what a user may not view
answers 404; ``OwnerEditsViewersRead`` lets only the owner change or delete. Bad input
answers 400 ``{"errors": {path: [messages]}}`` (gridweb/api/errors.py) and creates nothing.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.contrib.auth import authenticate
from django.db import IntegrityError, connection, transaction
from django.db.models import CharField, Q, QuerySet
from django.db.models.functions import Cast
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gridweb.accounts import throttle
from gridweb.accounts.models import must_change_password
from gridweb.runs import exports, frames, jobs_table
from gridweb.runs.gallery import uses_policy
from gridweb.reproductions.models import Reproduction
from gridweb.runs.models import IDEMPOTENCY_KEY_LENGTH, Comment, Run, RunChunk, Status, Sweep
from gridweb.runs.views import gantt_frame
from gridweb.scenarios.models import Scenario, TraceFile
from gridweb.scenarios.traces import max_trace_bytes, store_trace
from gridweb.scenarios.validation import SpecInvalid, UserLimitReached, validate_spec
from gridweb.sharing import Visibility, default_group
from gridweb.web.upload_guard import upload_limit
from simengine.reproductions import RECIPES
from simengine.workload import STATUS_NAMES

from . import serializers as s
from .pagination import whole_number
from .parsers import SafeJSONParser
from .errors import bad_input
from .permissions import OwnerEditsViewersRead
import simengine

CHUNKS_PER_PAGE = 100
MAX_CHUNKS_PER_PAGE = 1000

ERRORS_RESPONSE = OpenApiResponse(
    inline_serializer("Errors", {"errors": serializers.DictField(child=serializers.ListField(
        child=serializers.CharField()))}),
    description='bad input: {"errors": {"dotted.field.path": ["message", ...]}}; nothing was created',
)


IDEMPOTENCY_PARAMETER = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description="1-200 visible ASCII characters (e.g. a UUID). A retried request with the same key answers what "
                "the first created (200) instead of creating it again; the same key with another body is refused (422).")


def _services():
    """gridweb.runs.services, imported when needed (it imports the execution machinery)."""
    from gridweb.runs import services  # (see the docstring)

    return services


# --- Token and the current user -------------------------------------------------------------------


class TokenView(APIView):
    """Exchange a username and password for the user's API token (created on first use)."""

    authentication_classes: list = []  # credentials are in the body; no session, so no CSRF
    permission_classes = [AllowAny]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]

    @extend_schema(
        request=inline_serializer("TokenRequest", {"username": serializers.CharField(),
                                                   "password": serializers.CharField()}),
        responses={200: inline_serializer("TokenResponse", {"token": serializers.CharField()}),
                   400: ERRORS_RESPONSE},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        username = request.data.get("username")
        password = request.data.get("password")
        errors = {field: ["this field is required"] for field, value in
                  (("username", username), ("password", password)) if not value}
        if errors:
            return bad_input(errors)
        # reserved before the password is checked (a cache that cannot count: 503, gridweb/accounts/middleware.py)
        reservation = throttle.reserve(request._request, str(username))
        if reservation.wait > 0:
            return Response({"errors": {"": [throttle.locked_message(reservation.wait)]}},
                            status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": str(math.ceil(reservation.wait))})
        user = authenticate(request._request, username=str(username), password=str(password))
        refusal = getattr(request._request, "gridweb_login_refusal", None)
        if user is None and refusal:  # the right password of a spent or expired invite
            return Response({"errors": {"": [refusal]}}, status=status.HTTP_403_FORBIDDEN)
        if user is None or not user.is_active:
            return bad_input({"": ["unable to log in with this username and password"]})
        throttle.succeeded(request._request, user.get_username())
        if must_change_password(user):
            return Response({"errors": {"": ["log in on the site first and choose a password of your own: the "
                                             "one-time password you were given gives no API token"]}},
                            status=status.HTTP_403_FORBIDDEN)
        token, _ = Token.objects.get_or_create(user=user)
        response = Response({"token": token.key})
        throttle.set_device_cookie(request._request, response)
        return response


class MeView(APIView):
    """Who the token (or session) belongs to and their research groups."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=inline_serializer("Me", {
        "id": serializers.IntegerField(), "username": serializers.CharField(), "email": serializers.CharField(),
        "groups": serializers.ListField(child=serializers.CharField())}))
    def get(self, request: Request) -> Response:
        user = request.user
        return Response({"id": user.pk, "username": user.username, "email": user.email,
                         "groups": list(user.groups.order_by("name").values_list("name", flat=True))})


# --- Shared behaviour -----------------------------------------------------------------------------


class SharedViewSet(viewsets.GenericViewSet):
    """Querysets of what the user may view; owner-only changes."""

    permission_classes = [OwnerEditsViewersRead]
    lookup_value_regex = "[0-9]+"
    model: type
    #: what a list shows of each object (``serializer_class``: one object, whole)
    list_serializer_class: type | None = None

    def get_serializer_class(self):
        if self.action == "list" and self.list_serializer_class is not None:
            return self.list_serializer_class
        return super().get_serializer_class()

    def get_queryset(self) -> QuerySet:
        return self.model.objects.visible_to(self.request.user).select_related("owner", "group")

    def filter_shared(self, queryset: QuerySet) -> QuerySet:
        """``author``, ``tag``, ``q`` (name/description), ``visibility``, ``since``/``until`` (dates)."""
        params = self.request.query_params
        errors: dict[str, list[str]] = {}
        if params.get("author"):
            queryset = queryset.filter(owner__username=params["author"])
        if params.get("tag"):
            queryset = with_tag(queryset, params["tag"])
        if params.get("q"):
            queryset = queryset.filter(Q(name__icontains=params["q"]) | Q(description__icontains=params["q"]))
        if params.get("visibility"):
            if params["visibility"] not in Visibility.values:
                errors["visibility"] = [f"must be one of {', '.join(Visibility.values)}"]
            queryset = queryset.filter(visibility=params["visibility"])
        for name, lookup in (("since", "gte"), ("until", "lte")):
            value = params.get(name)
            if not value:
                continue
            # A plain date counts whole days (until=2025-05-01 includes that day); parse_datetime
            # would read it as midnight.
            day = _parse(parse_date, value)
            moment = None if day else _parse(parse_datetime, value)
            if day is not None:
                queryset = queryset.filter(**{f"created__date__{lookup}": day})
            elif moment is not None:
                if timezone.is_naive(moment):
                    moment = timezone.make_aware(moment)
                queryset = queryset.filter(**{f"created__{lookup}": moment})
            else:
                errors[name] = [f"{value!r} is not a date (YYYY-MM-DD) or date and time (ISO 8601)"]
        if errors:
            raise ValidationError(errors)
        return queryset


def _parse(parser, value: str):
    try:
        return parser(value)
    except ValueError:  # well formed but impossible, e.g. 2025-02-30
        return None


def with_tag(queryset: QuerySet, tag: str) -> QuerySet:
    """Objects whose ``tags`` list holds ``tag`` (JSON containment where the database has it)."""
    if connection.features.supports_json_field_contains:
        return queryset.filter(tags__contains=[tag])
    # SQLite keeps the list as JSON text: a whole element is the tag between quotes.
    return queryset.annotate(tags_text=Cast("tags", CharField())).filter(tags_text__contains=json.dumps(tag))


def owner_and_sharing(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    return {"visibility": data.get("visibility", Visibility.PRIVATE),
            "group": data.get("group") if data.get("group") is not None else default_group(request.user)}


# --- Scenarios ------------------------------------------------------------------------------------

SHARED_FILTERS = [
    OpenApiParameter("author", str, description="owner's username"),
    OpenApiParameter("tag", str, description="has this tag"),
    OpenApiParameter("q", str, description="search in name and description"),
    OpenApiParameter("visibility", str, enum=Visibility.values),
    OpenApiParameter("since", str, description="created on or after (YYYY-MM-DD or ISO 8601)"),
    OpenApiParameter("until", str, description="created on or before (YYYY-MM-DD or ISO 8601)"),
]


@extend_schema_view(
    list=extend_schema(summary="Scenarios you may view", parameters=SHARED_FILTERS),
    retrieve=extend_schema(summary="One scenario"),
    create=extend_schema(summary="Save (or import) a scenario document",
                         responses={201: s.ScenarioSerializer, 400: ERRORS_RESPONSE}),
    update=extend_schema(summary="Replace a scenario (owner only)",
                         responses={200: s.ScenarioSerializer, 400: ERRORS_RESPONSE}),
    partial_update=extend_schema(summary="Change some fields of a scenario (owner only)",
                                 responses={200: s.ScenarioSerializer, 400: ERRORS_RESPONSE}),
    destroy=extend_schema(summary="Delete a scenario (owner only)"),
)
class ScenarioViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                      mixins.UpdateModelMixin, mixins.DestroyModelMixin, SharedViewSet):
    model = Scenario
    serializer_class = s.ScenarioSerializer
    list_serializer_class = s.ScenarioListSerializer
    parser_classes = [SafeJSONParser]

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        return self.filter_shared(queryset) if self.action == "list" else queryset

    def perform_create(self, serializer) -> None:
        serializer.save(owner=self.request.user)

    @extend_schema(summary="Check a scenario document without saving it", request=s.SpecSerializer,
                   responses={200: s.ValidationResultSerializer, 400: ERRORS_RESPONSE})
    @action(detail=False, methods=["post"])
    def validate(self, request: Request) -> Response:
        serializer = s.SpecSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            engine_scenario = validate_spec(serializer.validated_data["spec"], request.user)
        except SpecInvalid as exc:
            raise ValidationError(s.spec_errors(exc)) from exc

        return Response({"valid": True, "scenario_hash": simengine.scenario_hash(engine_scenario),
                         "scenario": engine_scenario.model_dump(mode="json")})

    @extend_schema(summary="Copy a scenario you may view into your own", request=s.ForkSerializer,
                   responses={201: s.ScenarioSerializer, 400: ERRORS_RESPONSE})
    @action(detail=True, methods=["post"])
    def fork(self, request: Request, pk: str | None = None) -> Response:
        original = self.get_object()
        serializer = s.ForkSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        name = serializer.validated_data.get("name") or f"{original.name} (fork)"[:200]
        fork = Scenario.objects.create(owner=request.user, group=default_group(request.user),
                                       visibility=Visibility.PRIVATE, name=name, description=original.description,
                                       tags=list(original.tags), spec=original.spec, forked_from=original)
        return Response(s.ScenarioSerializer(fork, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(summary="The scenario document as a JSON file (importable with POST /api/scenarios/)",
                   responses={(200, "application/json"): OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str | None = None) -> HttpResponse:
        scenario = self.get_object()
        response = HttpResponse(json.dumps(scenario.spec, indent=2) + "\n", content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="scenario-{scenario.pk}.json"'
        return response


# --- Traces ---------------------------------------------------------------------------------------


class TraceInUse(APIException):
    """A trace that saved scenarios or runs still to simulate read: 409, naming them."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "trace_in_use"


@extend_schema_view(
    list=extend_schema(summary="Uploaded traces you may view", parameters=SHARED_FILTERS),
    retrieve=extend_schema(summary="One trace: jobs, largest machine size, header metadata"),
    partial_update=extend_schema(summary="Rename or share a trace (owner only)",
                                 responses={200: s.TraceFileSerializer, 400: ERRORS_RESPONSE}),
    destroy=extend_schema(summary="Delete a trace (owner only; not while a saved scenario or a queued or running "
                                  "run uses it)",
                          responses={204: None, 409: OpenApiResponse(description="the trace is in use")}),
)
class TraceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
                   mixins.DestroyModelMixin, SharedViewSet):
    model = TraceFile
    serializer_class = s.TraceFileSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        return super().get_queryset().defer("content")

    def get_parsers(self):
        # Called before DRF sets ``self.action``; the only POST here is the upload.
        request = getattr(self, "request", None)
        if getattr(self, "action", None) == "create" or (request is not None and request.method == "POST"):
            return [MultiPartParser(), FormParser()]
        return [SafeJSONParser()]

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        return self.filter_shared(queryset) if self.action == "list" else queryset

    def perform_destroy(self, trace: TraceFile) -> None:
        uses = _services().trace_uses(trace, self.request.user)
        if uses:
            raise TraceInUse(f"trace {trace.name!r} is in use by {'; '.join(uses)}: delete or change those first "
                             "(finished runs keep their results)")
        trace.delete()

    def initial(self, request: Request, *args, **kwargs) -> None:
        # Refuse an oversize upload from its declared length, before anything reads the body
        # (the session's CSRF check would parse the whole multipart body otherwise).
        if request.method == "POST":
            length = int(request.META.get("CONTENT_LENGTH") or 0)
            if length > upload_limit():
                raise ValidationError({"file": [f"the upload is {length:,} bytes, larger than the limit of "
                                                f"{max_trace_bytes():,} bytes for a trace"]})
        super().initial(request, *args, **kwargs)

    @extend_schema(summary="Upload an SWF/GWF trace (multipart); it is read and checked by the engine",
                   request={"multipart/form-data": s.TraceUploadSerializer},
                   responses={201: s.TraceFileSerializer, 200: s.TraceFileSerializer, 400: ERRORS_RESPONSE})
    def create(self, request: Request) -> Response:
        upload = s.TraceUploadSerializer(data=request.data, context=self.get_serializer_context())
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        before = TraceFile.objects.filter(owner=request.user).count()
        trace = store_trace(request.user, data["file"], name=data.get("name"), format=data.get("format"),
                            description=data.get("description", ""), **owner_and_sharing(request, data))
        created = TraceFile.objects.filter(owner=request.user).count() > before
        return Response(s.TraceFileSerializer(trace, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(summary="The trace file as uploaded", responses={(200, "application/octet-stream"):
                                                                    OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"])
    def download(self, request: Request, pk: str | None = None) -> HttpResponse:
        trace = self.get_object()
        content = TraceFile.objects.values_list("content", flat=True).get(pk=trace.pk)
        response = HttpResponse(bytes(content), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{trace.stored_name}"'
        return response


# --- Runs -----------------------------------------------------------------------------------------

RUN_FILTERS = [
    *SHARED_FILTERS,
    OpenApiParameter("policy", str, description="a scheduler or grid policy the run uses, e.g. easy"),
    OpenApiParameter("platform", str, description="search in the platform description"),
    OpenApiParameter("status", str, enum=Status.values),
    OpenApiParameter("scenario", int, description="runs of this saved scenario"),
    OpenApiParameter("sweep", int, description="runs of this sweep"),
    OpenApiParameter("curated", bool, description="only curated (demo, reproduction) runs"),
]


@extend_schema_view(
    list=extend_schema(summary="Runs you may view", parameters=RUN_FILTERS),
    retrieve=extend_schema(summary="One run: status, progress, ETA, error, summary and metrics with CIs"),
    partial_update=extend_schema(summary="Rename, tag or share a run (owner only)",
                                 responses={200: s.RunDetailSerializer, 400: ERRORS_RESPONSE}),
    destroy=extend_schema(summary="Delete a run (owner only; a running run is cancelled first)"),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
                 mixins.DestroyModelMixin, SharedViewSet):
    model = Run
    serializer_class = s.RunDetailSerializer
    list_serializer_class = s.RunSerializer
    parser_classes = [SafeJSONParser]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        queryset = super().get_queryset()
        if self.action == "list":
            queryset = queryset.defer("spec", "summary", "thumbnail")
        return queryset

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.action != "list":
            return queryset
        queryset = self.filter_shared(queryset)
        params = self.request.query_params
        errors: dict[str, list[str]] = {}
        if params.get("policy"):
            queryset = queryset.filter(uses_policy(params["policy"]))  # (as the gallery's filter)
        if params.get("platform"):
            queryset = queryset.filter(platform__icontains=params["platform"])
        if params.get("status"):
            if params["status"] not in Status.values:
                errors["status"] = [f"must be one of {', '.join(Status.values)}"]
            queryset = queryset.filter(status=params["status"])
        for name in ("scenario", "sweep"):
            if params.get(name):
                if not params[name].isdigit():
                    errors[name] = ["must be an id (a whole number)"]
                else:
                    queryset = queryset.filter(**{f"{name}_id": int(params[name])})
        if params.get("curated"):
            queryset = queryset.filter(curated=params["curated"].lower() in ("1", "true", "yes"))
        if errors:
            raise ValidationError(errors)
        return queryset

    @extend_schema(summary="Start a run of a scenario document or of a saved scenario",
                   request=s.RunCreateSerializer, parameters=[IDEMPOTENCY_PARAMETER],
                   responses={201: s.RunDetailSerializer, 200: s.RunDetailSerializer, 400: ERRORS_RESPONSE})
    def create(self, request: Request) -> Response:
        key = idempotency_key(request)
        serializer = s.RunCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            run, created = create_once(Run, request, key, lambda: _services().create_run(
                request.user, data["spec"], name=data.get("name"), scenario=data.get("scenario"),
                visibility=data["visibility"], group=data["group"], tags=data.get("tags", []),
                description=data.get("description", ""), idempotency_key=key),
                same_request=lambda found: found.spec == data["spec"])
        except SpecInvalid as exc:
            raise ValidationError(s.spec_errors(exc, "scenario.spec" if data.get("scenario") else "spec")) from exc
        return Response(s.RunDetailSerializer(run, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def perform_destroy(self, run: Run) -> None:
        services = _services()
        if not run.finished:
            try:
                services.cancel_run(run, self.request.user)  # stop the worker before the rows go
            except services.CannotCancel:
                pass  # it ended meanwhile
        run.delete()

    @extend_schema(summary="Cancel a queued or running run (owner only)", request=None,
                   responses={200: s.RunDetailSerializer,
                              409: OpenApiResponse(description="the run has already ended (done or failed)")})
    @action(detail=True, methods=["post"], parser_classes=[SafeJSONParser, FormParser, MultiPartParser])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        services = _services()
        try:
            services.cancel_run(run, request.user)
        except services.CannotCancel as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response(s.RunDetailSerializer(run, context=self.get_serializer_context()).data)

    @extend_schema(summary="Stored stream chunks after a sequence number (what the websocket replays)",
                   parameters=[OpenApiParameter("after", int, description="last seq you hold (default -1)"),
                               OpenApiParameter("limit", int, description=f"at most this many (default "
                                                                          f"{CHUNKS_PER_PAGE}, max "
                                                                          f"{MAX_CHUNKS_PER_PAGE})")],
                   responses={200: s.ChunksResponseSerializer, 400: ERRORS_RESPONSE})
    @action(detail=True, methods=["get"])
    def chunks(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        errors: dict[str, list[str]] = {}
        after = _int_param(request, "after", -1, -1, None, errors)
        limit = _int_param(request, "limit", CHUNKS_PER_PAGE, 1, MAX_CHUNKS_PER_PAGE, errors)
        if errors:
            raise ValidationError(errors)
        rows = list(RunChunk.objects.filter(run=run, seq__gt=after).order_by("seq")[:limit + 1])
        chunks = [{**frames.chunk_as_json(row.payload, row.data), "seq": row.seq, "kind": row.kind}
                  for row in rows[:limit]]
        return Response({"run": run.pk, "status": run.status, "last_seq": run.last_seq,
                         "more": len(rows) > limit, "chunks": chunks})

    @extend_schema(summary="What the Gantt draws for a window: its segments or an occupancy raster (binary frame)",
                   parameters=[OpenApiParameter("t0", float), OpenApiParameter("t1", float),
                               OpenApiParameter("width", int), OpenApiParameter("height", int),
                               OpenApiParameter("replication", int)],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              400: OpenApiResponse(description="a bad parameter, named"),
                              409: OpenApiResponse(description="that replication cannot be drawn now")})
    @action(detail=True, methods=["get"], url_path="gantt/tile", url_name="gantt-tile")
    def gantt_tile(self, request: Request, pk: str | None = None):
        return gantt_frame("tile", self.get_object(), request.query_params)

    @extend_schema(summary="Every Gantt segment of one job (binary frame)",
                   parameters=[OpenApiParameter("stream", int, required=True),
                               OpenApiParameter("job_id", int, required=True), OpenApiParameter("replication", int)],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              400: OpenApiResponse(description="a bad parameter, named")})
    @action(detail=True, methods=["get"], url_path="gantt/job", url_name="gantt-job")
    def gantt_job(self, request: Request, pk: str | None = None):
        return gantt_frame("job", self.get_object(), request.query_params)

    @extend_schema(summary="The Gantt segments on one processor at a time (binary frame)",
                   parameters=[OpenApiParameter("cluster", int, required=True),
                               OpenApiParameter("processor", int, required=True),
                               OpenApiParameter("t", float, required=True), OpenApiParameter("replication", int)],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              400: OpenApiResponse(description="a bad parameter, named")})
    @action(detail=True, methods=["get"], url_path="gantt/at", url_name="gantt-at")
    def gantt_at(self, request: Request, pk: str | None = None):
        return gantt_frame("at", self.get_object(), request.query_params)

    @extend_schema(summary="Gantt rows of replication 0 as columns (done runs)",
                   responses={200: s.SegmentsResponseSerializer, 409: OpenApiResponse(description="not done")})
    @action(detail=True, methods=["get"])
    def segments(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        try:
            columns = exports.segments_columns(run)
        except exports.ExportUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"columns": columns, "rows": len(columns.get("t0", []))})

    @extend_schema(
        summary="A page of a done run's job rows, filtered and sorted (the run page's Jobs table)",
        parameters=[
            OpenApiParameter("offset", int, description=jobs_table.PARAMETER_HELP["offset"]),
            OpenApiParameter("limit", int, description=jobs_table.PARAMETER_HELP["limit"]),
            OpenApiParameter("status", str, enum=list(STATUS_NAMES), description=jobs_table.PARAMETER_HELP["status"]),
            OpenApiParameter("stream", int, description=jobs_table.PARAMETER_HELP["stream"]),
            OpenApiParameter("replication", int, description=jobs_table.PARAMETER_HELP["replication"]),
            OpenApiParameter("sort", str, description=jobs_table.PARAMETER_HELP["sort"]),
        ],
        responses={200: s.JobsPageSerializer, 400: ERRORS_RESPONSE,
                   404: OpenApiResponse(description="no such run that you may view"),
                   409: OpenApiResponse(description="the run has no stored result (not done)")})
    @action(detail=True, methods=["get"])
    def jobs(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        try:
            body = jobs_table.jobs_page(run, request.query_params)  # the same code as the page's jobs.json
        except jobs_table.BadParameter as exc:
            raise ValidationError({exc.name: [exc.reason]}) from exc
        except exports.ExportUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(body)

    @extend_schema(methods=["get"], summary="Comments on a run you may view",
                   responses={200: s.CommentSerializer(many=True)})
    @extend_schema(methods=["post"], summary="Comment on a run you may view", request=s.CommentSerializer,
                   responses={201: s.CommentSerializer, 400: ERRORS_RESPONSE})
    @action(detail=True, methods=["get", "post"])
    def comments(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        if request.method == "GET":
            comments = Comment.objects.filter(run=run).select_related("author")
            return Response(s.CommentSerializer(comments, many=True).data)
        serializer = s.CommentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        serializer.save(run=run, author=request.user)
        return Response(serializer.data, status=status.HTTP_201_CREATED)


def _int_param(request: Request, name: str, default: int, low: int, high: int | None,
               errors: dict[str, list[str]]) -> int:
    # read as the list pages read limit and offset (one reading: no " 5", no echo of 5,000 digits)
    try:
        value = whole_number(request, name, default, low)
    except ValidationError as exc:
        errors.update(exc.detail)
        return default
    if high is not None and value > high:
        errors[name] = [f"must be at least {low} and at most {high}"]
    return value


class RunExportView(APIView):
    """One download of a done run, written by the engine's own writers (docs/output.md)."""

    permission_classes = [AllowAny]  # visibility is checked on the run itself (404 when hidden)
    EXPORTS = {
        "jobs.csv": (exports.jobs_csv, "text/csv; charset=utf-8"),
        "schedule.swf": (exports.schedule_swf, "text/plain; charset=utf-8"),
        "batsim_jobs.csv": (exports.batsim_jobs_csv, "text/csv; charset=utf-8"),
        "scenario.json": (exports.scenario_json, "application/json"),
        "metrics.json": (exports.metrics_json, "application/json"),
    }

    @extend_schema(parameters=[OpenApiParameter(
                       "precision", str, description="schedule.swf and batsim_jobs.csv: decimals of the times, 0 "
                                                     "to 9, or 'exact' (defaults: 0 for schedule.swf, the integer "
                                                     "seconds SWF readers expect; exact for batsim_jobs.csv)")],
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              400: OpenApiResponse(description="a bad precision"),
                              404: OpenApiResponse(description="no such run that you may view"),
                              409: OpenApiResponse(description="the run has no result (not done)")})
    def get(self, request: Request, pk: int, export: str) -> HttpResponse:
        run = get_object_or_404(Run.objects.visible_to(request.user), pk=pk)
        write, content_type = self.EXPORTS[export]
        options = {}
        if export in exports.PRECISION_DEFAULT:
            try:
                options["precision"] = exports.precision(export, request.query_params.get("precision"))
            except ValueError as exc:
                return bad_input({"precision": [str(exc).split(": ", 1)[1]]})
        try:
            content = write(run, **options)
        except exports.ExportUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return exports.download(request, content, content_type, f"run-{run.pk}-{export}")


# --- Sweeps ---------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="Sweeps you may view", parameters=SHARED_FILTERS),
    retrieve=extend_schema(summary="One sweep: its points' aggregate (metric CIs) and its runs"),
)
class SweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, SharedViewSet):
    model = Sweep
    serializer_class = s.SweepDetailSerializer
    list_serializer_class = s.SweepSerializer
    parser_classes = [SafeJSONParser]

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        return self.filter_shared(queryset) if self.action == "list" else queryset

    @extend_schema(summary="Start a parameter sweep: one run per point, fanned out over the workers",
                   request=s.SweepCreateSerializer, parameters=[IDEMPOTENCY_PARAMETER],
                   responses={201: s.SweepDetailSerializer, 200: s.SweepDetailSerializer, 400: ERRORS_RESPONSE})
    def create(self, request: Request) -> Response:
        key = idempotency_key(request)
        serializer = s.SweepCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        spec_field = "scenario.spec" if data.get("scenario") else "spec"
        try:
            sweep, created = create_once(Sweep, request, key, lambda: _services().create_sweep(
                request.user, data["spec"], data["parameters"], name=data.get("name"),
                scenario=data.get("scenario"), visibility=data["visibility"], group=data["group"],
                tags=data.get("tags", []), description=data.get("description", ""), idempotency_key=key),
                same_request=lambda found: (found.spec, found.parameters) == (data["spec"], data["parameters"]))
        except SpecInvalid as exc:
            raise ValidationError(sweep_errors(exc, spec_field)) from exc
        return Response(s.SweepDetailSerializer(sweep, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def create_once(model, request: Request, key: str, create, same_request) -> tuple[Any, bool]:
    """(what ``create()`` made, True), or (what an earlier request with the same Idempotency-Key
    made, False) -- refused (422) when ``same_request(it)`` says that request had another body."""
    found = model.objects.filter(owner=request.user, idempotency_key=key).first() if key else None
    if found is None:
        try:
            with transaction.atomic():
                return create(), True
        except IntegrityError:
            # a request with the same key was committed meanwhile: it is the answer
            found = model.objects.filter(owner=request.user, idempotency_key=key).first() if key else None
            if found is None:
                raise
    if not same_request(found):
        raise same_key_other_request(key, f"{model.__name__.lower()} {found.pk}")
    return found, False


IDEMPOTENCY_HEADER = "Idempotency-Key"


def idempotency_key(request: Request) -> str:
    """The request's ``Idempotency-Key`` header ("" without one): a client that retries a POST
    with the same key gets what the first request created (200), not a second one. Refused
    unless 1-200 visible ASCII characters."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return ""
    if not 1 <= len(key) <= IDEMPOTENCY_KEY_LENGTH or not all("!" <= c <= "~" for c in key):
        raise ValidationError({IDEMPOTENCY_HEADER: [
            f"must be 1 to {IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (no spaces), e.g. a UUID; "
            f"got {len(key)} characters"]})
    return key


class IdempotencyKeyReused(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"


def same_key_other_request(key: str, what: str) -> APIException:
    return IdempotencyKeyReused(f"{IDEMPOTENCY_HEADER} {key!r} was already used for {what}, created from a "
                                "different request body; use a new key for a new request")


def sweep_errors(exc: SpecInvalid, spec_field: str) -> dict[str, list[str]]:
    """Errors of a sweep: those about ``parameters`` and sharing stay there, the scenario's go under ``spec``."""
    if isinstance(exc, UserLimitReached):
        return dict(exc.errors)
    errors: dict[str, list[str]] = {}
    for path, messages in exc.errors.items():
        own_field = path in ("parameters", "visibility", "group") or path.startswith("parameters.")
        key = path if own_field else (f"{spec_field}.{path}" if path else spec_field)
        errors.setdefault(key, []).extend(messages)
    return errors


# --- Reproductions -------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="Reproductions of the seed papers you may view",
                       parameters=[*SHARED_FILTERS, OpenApiParameter("recipe", str, enum=list(RECIPES))]),
    retrieve=extend_schema(summary="One reproduction: its claims with verdicts, figures and files"),
)
class ReproductionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, SharedViewSet):
    model = Reproduction
    serializer_class = s.ReproductionDetailSerializer
    list_serializer_class = s.ReproductionSerializer
    parser_classes = [SafeJSONParser]

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.action != "list":
            return queryset
        recipe = self.request.query_params.get("recipe")
        if recipe:
            if recipe not in RECIPES:
                raise ValidationError({"recipe": [f"must be one of {', '.join(RECIPES)}"]})
            queryset = queryset.filter(recipe=recipe)
        return self.filter_shared(queryset)

    @extend_schema(summary="A file the reproduction's recipe wrote (claims.csv, a figure's CSV or HTML page)",
                   responses={(200, "text/csv"): OpenApiTypes.BINARY, (200, "text/html"): OpenApiTypes.BINARY})
    def file(self, request: Request, pk: int, name: str) -> HttpResponse:
        """(Routed in urls.py without a trailing slash: the download keeps its file name.)"""
        # (imported when needed, as _services is: the app's backend imports the execution machinery)
        from gridweb.reproductions.execution import file_response

        return file_response(self.get_object(), name, attachment=True)

    @extend_schema(summary="Re-run a paper's reproduction on the workers (one queued or running per user)",
                   request=s.ReproductionCreateSerializer,
                   responses={201: s.ReproductionDetailSerializer, 400: ERRORS_RESPONSE})
    def create(self, request: Request) -> Response:
        # (imported when needed, as _services is: it imports the execution machinery)
        from gridweb.reproductions import execution as reproducing

        serializer = s.ReproductionCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            reproducing.check_active(request.user)
        except reproducing.TooManyActive as exc:
            raise ValidationError({"recipe": [str(exc)]}) from exc
        rep = reproducing.create_reproduction(request.user, data["recipe"], quick=data["quick"],
                                              visibility=data["visibility"], group=data["group"])
        return Response(s.ReproductionDetailSerializer(rep, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED)

