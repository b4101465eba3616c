"""Scenario pages: the list, the builder (new, edit, import), the read-only view, and the
JSON endpoints the builder calls while the user edits (validate, preview, trace upload).

Authorization follows ``gridweb.sharing``: whoever may view a scenario may open it, export it,
fork it and run it (the run is theirs); only its owner saves, duplicates or deletes it.
A scenario the user may not view is a 404 (its existence is not revealed); a visitor who is
not logged in is sent to the login page instead.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from gridweb.runs.models import Run
from gridweb import safe_json
from gridweb.sharing import Visibility, default_group

from . import catalog
from .forms import ImportForm, SharingForm, TraceUploadForm, name_errors
from .models import Scenario, TraceFile
from .preview import preview as preview_streams
from .validation import SpecInvalid, validate_spec

BLANK_DOCUMENT: dict[str, Any] = {
    "name": "New scenario",
    "description": "",
    "platform": {"clusters": []},
    "workload": {"streams": []},
    # no stop rule: a trace runs whole; a new synthetic stream comes with a job count (builder.js)
    "run": {"seed": 1, "replications": 1},
}


# --- helpers ------------------------------------------------------------------------------------


def _viewable_scenario(request: HttpRequest, pk: int) -> Scenario:
    """The scenario if the user may view it; 404 otherwise (the caller handles anonymous users)."""
    return get_object_or_404(Scenario.objects.visible_to(request.user), pk=pk)


def _scenario_or_login(request: HttpRequest, pk: int) -> Scenario | HttpResponse:
    """For pages visitors may see when the scenario is public: the scenario, or a redirect to
    the login page for an anonymous visitor, or 404 for a logged-in user who may not view it."""
    scenario = Scenario.objects.filter(pk=pk).first()
    if scenario is not None and scenario.can_view(request.user):
        return scenario
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    raise Http404("No scenario matches the given query.")


def _owned_scenario(request: HttpRequest, pk: int) -> Scenario:
    """The scenario if the user owns it: 404 if they may not even view it, 403 if they may view it."""
    scenario = _viewable_scenario(request, pk)
    if not scenario.can_edit(request.user):
        raise PermissionDenied("only the scenario's owner can change it")
    return scenario


def editable_document(spec: Any) -> Any:
    """A deep copy of ``spec`` with a platform preset written out as explicit clusters, so the
    builder can show and edit every cluster (the scenario means the same)."""
    spec = copy.deepcopy(spec)
    platform = spec.get("platform") if isinstance(spec, dict) else None
    if isinstance(platform, dict) and platform.get("preset") and "clusters" not in platform:
        try:
            clusters = catalog.presets.platform(platform["preset"])["clusters"]
        except KeyError:
            return spec  # unknown preset: leave it, validation names it
        spec["platform"] = {**{k: v for k, v in platform.items() if k != "preset"}, "clusters": clusters}
    return spec


def run_page_url(run: Run) -> str:
    return reverse("runs:run", args=[run.pk])


def _scenario_urls(scenario: Scenario) -> dict[str, str]:
    return {
        "view": reverse("scenarios:detail", args=[scenario.pk]),
        "edit": reverse("scenarios:edit", args=[scenario.pk]),
        "export": reverse("scenarios:export", args=[scenario.pk]),
        "run": reverse("scenarios:run", args=[scenario.pk]),
        "duplicate": reverse("scenarios:duplicate", args=[scenario.pk]),
        "delete": reverse("scenarios:delete", args=[scenario.pk]),
        "fork": reverse("scenarios:new") + f"?from={scenario.pk}",
    }


def trace_choices(user) -> list[dict[str, Any]]:
    """Uploaded and demo traces the user may use in a trace stream."""
    traces = TraceFile.objects.visible_to(user).select_related("owner").order_by("name")
    return [
        {"stored_name": t.stored_name, "name": t.name, "original_name": t.original_name, "format": t.format,
         "jobs": t.jobs, "max_processors": t.max_processors, "owner": t.owner.username, "size": t.size,
         "sites": (t.metadata or {}).get("sites", [])}
        for t in traces.defer("content")
    ]


def _builder(request: HttpRequest, *, document: Any, scenario: Scenario | None = None,
             meta: dict[str, Any] | None = None, forked_from: Scenario | None = None,
             errors: dict[str, list[str]] | None = None, origin: str = "", status: int = 200) -> HttpResponse:
    """Render the builder for ``document`` (a new scenario when ``scenario`` is None)."""
    user = request.user
    groups = Group.objects.all() if user.is_superuser else user.groups.all()
    if meta is None:
        group = default_group(user)
        meta = {"tags": [], "visibility": Visibility.PRIVATE, "group": group.pk if group else None}
    config = {
        "mode": "edit" if scenario else "new",
        "scenario": ({"id": scenario.pk, "name": scenario.name, "urls": _scenario_urls(scenario)}
                     if scenario else None),
        "document": editable_document(document),
        "meta": meta,
        "forked_from": ({"id": forked_from.pk, "name": forked_from.name,
                         "url": reverse("scenarios:detail", args=[forked_from.pk])} if forked_from else None),
        "errors": errors or {},
        "urls": {
            "save": reverse("scenarios:edit", args=[scenario.pk]) if scenario else reverse("scenarios:new"),
            "validate": reverse("scenarios:validate"),
            "preview": reverse("scenarios:preview"),
            "trace_upload": reverse("scenarios:trace_upload"),
            "new": reverse("scenarios:new"),
            "list": reverse("scenarios:list"),
        },
        "catalog": catalog.engine_catalog(),
        "traces": trace_choices(user),
        "groups": [{"id": g.pk, "name": g.name} for g in groups.order_by("name")],
        "visibility_choices": [[value, label] for value, label in Visibility.choices],
        "max_trace_bytes": int(settings.GRIDWEB_MAX_TRACE_BYTES),
    }
    context = {"config": config, "scenario": scenario, "origin": origin, "import_form": ImportForm()}
    return render(request, "scenarios/builder.html", context, status=status)


def _json_body(request: HttpRequest) -> Any:
    try:
        return safe_json.loads(request.body)
    except safe_json.BadJson as exc:
        raise ValueError(f"the request body is not acceptable JSON: {exc}") from None
    except RequestDataTooBig:  # (else Django's HTML page, naming nothing)
        raise ValueError(f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes") from None


def _bad_request(errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse({"errors": errors}, status=400)


def _spec_errors(spec: Any, user) -> dict[str, list[str]]:
    try:
        validate_spec(spec, user)
    except SpecInvalid as exc:
        return exc.errors
    return {}


# --- the list -----------------------------------------------------------------------------------


@require_GET
def scenario_list(request: HttpRequest) -> HttpResponse:
    """Scenarios the user may view (visitors: public ones), newest first, with a search box."""
    query = request.GET.get("q", "").strip()
    mine = request.GET.get("mine") == "1" and request.user.is_authenticated
    scenarios = (Scenario.objects.visible_to(request.user).select_related("owner", "forked_from")
                 .defer("spec").order_by("-updated"))
    if mine:
        scenarios = scenarios.filter(owner=request.user)
    if query:
        scenarios = scenarios.annotate(tags_text=Cast("tags", output_field=TextField())).filter(
            Q(name__icontains=query) | Q(description__icontains=query) | Q(tags_text__icontains=query)
            | Q(owner__username__iexact=query)
        )
    page = Paginator(scenarios, 50).get_page(request.GET.get("page"))
    context = {"page": page, "query": query, "mine": mine, "presets": catalog.scenario_presets()}
    return render(request, "scenarios/list.html", context)


# --- the builder --------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def scenario_new(request: HttpRequest) -> HttpResponse:
    """GET: the builder, blank or started from ``?preset=``, ``?from=<scenario>`` (a fork) or
    ``?from_run=<run>``. POST (JSON): create the scenario."""
    if request.method == "POST":
        return _save(request, None)
    user = request.user
    if "preset" in request.GET:
        name = request.GET["preset"]
        try:
            document = catalog.preset_document(name)
        except KeyError:
            raise Http404(f"No scenario preset named {name!r}.") from None
        return _builder(request, document=document, origin=f"Preset: {name}")
    if "from" in request.GET:
        source = _viewable_scenario(request, _int_param(request, "from"))
        document = copy.deepcopy(source.spec)
        if source.owner_id != user.pk:
            document["name"] = f"{source.name} (fork)"
        meta = {"tags": list(source.tags), "visibility": Visibility.PRIVATE,
                "group": default_group(user).pk if default_group(user) else None}
        return _builder(request, document=document, meta=meta, forked_from=source,
                        origin=f"Fork of {source.name}")
    if "from_run" in request.GET:
        run = get_object_or_404(Run.objects.visible_to(user), pk=_int_param(request, "from_run"))
        document = copy.deepcopy(run.spec)
        source = run.scenario if run.scenario is not None and run.scenario.can_view(user) else None
        return _builder(request, document=document, forked_from=source, origin=f"From run: {run.name}")
    return _builder(request, document=copy.deepcopy(BLANK_DOCUMENT), origin="Blank")


def _int_param(request: HttpRequest, name: str) -> int:
    try:
        return int(request.GET[name])
    except (TypeError, ValueError):
        raise Http404(f"{name} must be a number") from None


@login_required
@require_http_methods(["GET", "POST"])
def scenario_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the builder for the owner (other viewers are sent to the read-only view).
    POST (JSON): save the owner's changes."""
    if request.method == "POST":
        return _save(request, _owned_scenario(request, pk))
    scenario = _viewable_scenario(request, pk)
    if not scenario.can_edit(request.user):
        messages.info(request, "Only the owner edits this scenario; fork it to make your own copy.")
        return redirect("scenarios:detail", pk=scenario.pk)
    meta = {"tags": list(scenario.tags), "visibility": scenario.visibility, "group": scenario.group_id}
    return _builder(request, document=scenario.spec, scenario=scenario, meta=meta,
                    forked_from=scenario.forked_from, origin="Saved scenario")


def _save(request: HttpRequest, scenario: Scenario | None) -> JsonResponse:
    """Create (``scenario`` None) or update a scenario from the builder's JSON body
    ``{"spec": {...}, "meta": {"tags", "visibility", "group"}, "forked_from": id}``.

    Every error (document, name, sharing) comes back at once as ``{"errors": {path: [...]}}``
    with status 400, and nothing is stored."""
    try:
        body = _json_body(request)
    except ValueError as exc:
        return _bad_request({"": [str(exc)]})
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        return _bad_request({"": ['send {"spec": <the scenario document>, "meta": {...}}']})
    spec = body["spec"]
    meta = body.get("meta") if isinstance(body.get("meta"), dict) else {}
    sharing = SharingForm({"tags": meta.get("tags"), "visibility": meta.get("visibility", Visibility.PRIVATE),
                           "group": meta.get("group")}, user=request.user)
    errors = name_errors(spec)
    if not sharing.is_valid():
        errors.update(sharing.path_errors())
    for path, found in _spec_errors(spec, request.user).items():
        errors.setdefault(path, []).extend(found)
    forked_from = None
    if scenario is None and body.get("forked_from") not in (None, ""):
        forked_from = Scenario.objects.visible_to(request.user).filter(pk=_as_int(body["forked_from"])).first()
        if forked_from is None:
            errors["forked_from"] = ["no scenario you may view has that id"]
    if errors:
        return _bad_request(errors)

    fields = {
        "spec": spec, "name": spec["name"].strip(), "description": str(spec.get("description") or ""),
        "tags": sharing.cleaned_data["tags"], "visibility": sharing.cleaned_data["visibility"],
        "group": sharing.cleaned_data["group"],
    }
    created = scenario is None
    with transaction.atomic():
        if created:
            scenario = Scenario.objects.create(owner=request.user, forked_from=forked_from, **fields)
        else:
            for key, value in fields.items():
                setattr(scenario, key, value)
            scenario.save()
    return JsonResponse({"id": scenario.pk, "name": scenario.name, "created": created,
                         "urls": _scenario_urls(scenario)}, status=201 if created else 200)


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@login_required
@require_http_methods(["GET", "POST"])
def scenario_import(request: HttpRequest) -> HttpResponse:
    """A scenario JSON file into the builder (not saved yet), with its validation errors shown."""
    if request.method == "GET":
        return render(request, "scenarios/import.html", {"form": ImportForm()})
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "scenarios/import.html", {"form": form}, status=400)
    document = form.cleaned_data["file"]
    errors = _spec_errors(document, request.user) | name_errors(document)
    group = default_group(request.user)
    meta = {"tags": form.imported_tags, "visibility": Visibility.PRIVATE, "group": group.pk if group else None}
    return _builder(request, document=document, meta=meta, errors=errors,
                    origin=f"Imported from {request.FILES['file'].name}")


# --- JSON endpoints the builder calls while the user edits -------------------------------------


@login_required
@require_POST
def validate(request: HttpRequest) -> JsonResponse:
    """Validate a document (the body, or ``{"spec": ...}``) through the engine's schema.

    Answers ``{"valid": bool, "errors": {dotted path: [messages]}}`` (status 200 either way:
    an invalid document is a normal answer here; saving one is what is refused)."""
    try:
        body = _json_body(request)
    except ValueError as exc:
        return _bad_request({"": [str(exc)]})
    spec = body["spec"] if isinstance(body, dict) and isinstance(body.get("spec"), dict) else body
    errors = _spec_errors(spec, request.user) | name_errors(spec)
    return JsonResponse({"valid": not errors, "errors": errors})


@login_required
@require_POST
def preview(request: HttpRequest) -> JsonResponse:
    """Histograms of job sizes and runtimes and the offered load per cluster (see preview.py)."""
    try:
        body = _json_body(request)
    except ValueError as exc:
        return _bad_request({"": [str(exc)]})
    spec = body["spec"] if isinstance(body, dict) and isinstance(body.get("spec"), dict) else body
    return JsonResponse(preview_streams(spec, request.user))


@require_GET
def engine_catalog(request: HttpRequest) -> JsonResponse:
    """What the engine offers (policies and their parameter schemas, distributions, presets)."""
    return JsonResponse(catalog.engine_catalog())


@login_required
@require_POST
def trace_upload(request: HttpRequest) -> JsonResponse:
    """Store an uploaded SWF/GWF trace for the user; errors name the field and, for malformed
    content, the line. Answers ``{"trace": {...}}`` (201) or ``{"errors": {...}}`` (400)."""
    from .traces import TraceInvalid, store_trace  # written alongside; imported when needed

    form = TraceUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _bad_request({field: [str(m) for m in found] for field, found in form.errors.items()})
    data = form.cleaned_data
    try:
        trace = store_trace(request.user, data["file"], name=data["name"] or None,
                            visibility=data["visibility"] or Visibility.PRIVATE, format=data["format"] or None)
    except TraceInvalid as exc:
        return _bad_request(exc.errors)
    choice = next(t for t in trace_choices(request.user) if t["stored_name"] == trace.stored_name)
    return JsonResponse({"trace": choice}, status=201)


# --- one scenario -------------------------------------------------------------------------------


@require_GET
def scenario_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The read-only view (with Fork, Export and Run; Edit, Duplicate and Delete for the owner)."""
    found = _scenario_or_login(request, pk)
    if isinstance(found, HttpResponse):
        return found
    scenario = found
    runs = (Run.objects.visible_to(request.user).filter(scenario=scenario).select_related("owner")
            .defer("spec", "summary", "thumbnail"))
    try:
        summary = validate_spec(scenario.spec, None)
    except SpecInvalid:
        summary = None  # e.g. saved with an older engine; the template says so
    context = {
        "streams": describe_streams(summary) if summary else [],
        "cluster_rows": [{"cluster": c, "scheduler": params_text(c.scheduler.params or {}),
                          "preemption": params_text(c.preemption.params or {})}
                         for c in summary.platform.clusters] if summary else [],
        "scenario": scenario,
        "can_edit": scenario.can_edit(request.user),
        "runs": runs.order_by("-created")[:20],
        "engine_scenario": summary,
        "spec_json": json.dumps(scenario.spec, indent=2),
        "urls": _scenario_urls(scenario),
    }
    return render(request, "scenarios/detail.html", context)


def _value_text(v) -> str:
    """A parameter's value for people: 60 not 60.0, yes/no not True/False, a nested distribution
    as 'uniform (low 1, high 3)' not a Python dict."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict):
        inner = params_text({k: x for k, x in v.items() if k != "kind"})
        return f"{str(v['kind']).replace('_', ' ')} ({inner})" if "kind" in v else f"({inner})"
    if isinstance(v, list):
        return ", ".join(_value_text(x) for x in v)
    return str(v)


def params_text(params: dict) -> str:
    """'overhead 60, integer yes' for ``{"overhead": 60.0, "integer": True}`` (unset ones left out)."""
    return ", ".join(f"{k} {_value_text(v)}" for k, v in params.items() if v is not None)


def _distribution(d) -> str:
    params = params_text({k: v for k, v in d.model_dump(by_alias=True).items() if k != "kind"})
    return f"{d.kind.replace('_', ' ')} ({params})"


def describe_streams(engine_scenario) -> list[dict[str, str]]:
    """One line per stream of a validated scenario, for the read-only view."""
    rows = []
    for stream in engine_scenario.workload.streams:
        if stream.kind == "synthetic":
            arrival = stream.arrival
            given = next((f"{k.replace('_', ' ')} {getattr(arrival, k):g}"
                          for k in ("rate", "mean_interarrival", "target_load") if getattr(arrival, k) is not None), "")
            details = f"Poisson, {given}; size {_distribution(stream.size)}; runtime {_distribution(stream.runtime)}"
            if stream.count:
                details += f"; {stream.count} jobs"
        elif stream.kind == "trace":
            details = f"trace {stream.path} ({stream.format})"
            if stream.limit:
                details += f", first {stream.limit} jobs"
        elif stream.kind == "lublin":
            scaling = (f"target load {stream.target_load:g}" if stream.target_load is not None
                       else f"time scale {stream.time_scale:g}")
            details = f"Lublin-Feitelson ({stream.job_types} jobs), {stream.count} jobs, {scaling}"
        else:  # the grid layer's kinds (coallocated, koala, evolving): their document says the rest
            count = getattr(stream, "count", None)
            details = f"{stream.kind} jobs" + (f", {count} jobs" if count else "")
        if getattr(stream, "priority", 0):
            details += f"; priority {stream.priority}"
        rows.append({"name": stream.name, "kind": stream.kind, "target": stream.target, "details": details})
    return rows


@require_GET
def scenario_export(request: HttpRequest, pk: int) -> HttpResponse:
    """The scenario document as a JSON file (what the builder imports and the CLI runs)."""
    found = _scenario_or_login(request, pk)
    if isinstance(found, HttpResponse):
        return found
    body = json.dumps(found.spec, indent=2, ensure_ascii=False) + "\n"
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in found.name).strip("-")[:80] or "scenario"
    response["Content-Disposition"] = f'attachment; filename="{slug}.json"'
    return response


@login_required
@require_POST
def scenario_duplicate(request: HttpRequest, pk: int) -> HttpResponse:
    """The owner's copy of their own scenario (records where it came from); opens it in the builder."""
    original = _owned_scenario(request, pk)
    spec = copy.deepcopy(original.spec)
    spec["name"] = f"Copy of {original.name}"[:200]
    copy_ = Scenario.objects.create(
        owner=request.user, group=original.group, visibility=original.visibility, name=spec["name"],
        description=original.description, tags=list(original.tags), spec=spec, forked_from=original,
    )
    messages.success(request, f"Duplicated “{original.name}”.")
    return redirect("scenarios:edit", pk=copy_.pk)


@login_required
@require_POST
def scenario_delete(request: HttpRequest, pk: int) -> HttpResponse:
    scenario = _owned_scenario(request, pk)
    name = scenario.name
    scenario.delete()
    messages.success(request, f"Deleted “{name}”.")
    return redirect("scenarios:list")


@login_required
@require_POST
def scenario_run(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a run of the scenario (any viewer; the run is theirs) and open its page."""
    from gridweb.runs.services import create_run  # (the runs backend; imported when a run starts)

    scenario = _viewable_scenario(request, pk)
    owner = scenario.owner_id == request.user.pk  # a run of someone else's scenario starts private
    try:
        run = create_run(
            request.user, scenario.spec, scenario=scenario, name=scenario.name,
            visibility=scenario.visibility if owner else Visibility.PRIVATE,
            group=scenario.group if owner else None, tags=list(scenario.tags),
        )
    except SpecInvalid as exc:
        for path, found in exc.errors.items():
            messages.error(request, f"{path or 'scenario'}: {'; '.join(found)}")
        return redirect("scenarios:detail", pk=scenario.pk)
    return redirect(run_page_url(run))
