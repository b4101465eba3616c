"""The run page (the permalink of a run), its actions and downloads, the gallery, compare
and the sweep pages (the list, a sweep, its status for polling, and the form that starts one).

Who may do what (gridweb/sharing.py): whoever may view a run sees its page, its segments,
its exports and may comment (when logged in); only its owner (or a superuser) cancels or
deletes it. A run the user may not view answers 404, exactly as a run that does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from bokeh.embed import json_item
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from gridweb.scenarios.forms import SharingForm
from gridweb.scenarios.models import Scenario
from gridweb.scenarios.validation import SpecInvalid, validate_spec
from gridweb.sharing import Visibility, default_group
from simengine.gantt import KIND_NAMES
from simengine.statistics import SHAKY_RULE
from simengine.workload import STATUS_NAMES

from . import citation as citing
from . import compare as comparing
from . import gantt_tiles
from . import gallery as gallery_filters
from . import plots
from . import sweep_form
from .gantt_data import result_arrays, segments_payload
from .gantt_tiles import cluster_layout
from .jobs_table import BadParameter, jobs_page, stream_labels
from .models import FINISHED, Comment, Run, Status, Sweep

@dataclass(frozen=True)
class Export:
    """One file a run exports: the function of gridweb.runs.exports that makes it, its type, its
    label on the run page, whether it needs a result, and whether a done run offers it."""

    function: str
    content_type: str
    label: str
    needs_result: bool = True
    offered: Callable[[Run], bool] = lambda run: True

    def available(self, run: Run) -> bool:
        return (run.status == Status.DONE or not self.needs_result) and self.offered(run)


def _has_users(run: Run) -> bool:
    """Whether the run's jobs carry users (then its metrics count them): users.csv has rows."""
    return "users_measured" in ((run.summary or {}).get("metrics") or {})


#: What a run exports, by URL suffix.
EXPORTS: dict[str, Export] = {
    "jobs.csv": Export("jobs_csv", "text/csv; charset=utf-8", "Jobs (CSV)"),
    "schedule.swf": Export("schedule_swf", "text/plain; charset=utf-8", "Schedule (SWF)"),
    "batsim_jobs.csv": Export("batsim_jobs_csv", "text/csv; charset=utf-8", "Jobs for Batsim / evalys (CSV)"),
    "users.csv": Export("users_csv", "text/csv; charset=utf-8", "Per-user waits and slowdowns (CSV)",
                        offered=_has_users),
    "scenario.json": Export("scenario_json", "application/json", "Scenario (JSON)", needs_result=False),
    "metrics.json": Export("metrics_json", "application/json", "Metrics (JSON)"),
}
GALLERY_PAGE_SIZE = 24


# --- Access --------------------------------------------------------------------------------------

def viewable_run(request: HttpRequest, pk: int) -> Run:
    """The run, if ``request.user`` may view it; 404 otherwise (private runs stay invisible)."""
    run = get_object_or_404(Run.objects.select_related("owner", "group", "sweep"), pk=pk)
    if not run.can_view(request.user):
        raise Http404("No such run.")
    return run


def owned_run(request: HttpRequest, pk: int) -> Run:
    """The run, if ``request.user`` may change it (its owner); 403 for other viewers."""
    run = viewable_run(request, pk)
    if not run.can_edit(request.user):
        raise PermissionDenied("Only the run's owner may do this.")
    return run


# --- The run page --------------------------------------------------------------------------------

class CommentForm(forms.ModelForm):
    class Meta:
        model = Comment
        fields = ["text"]
        widgets = {"text": forms.Textarea(attrs={"rows": 3, "placeholder": "Say something about this run"})}
        labels = {"text": "Comment"}


def eta_seconds(run: Run) -> float | None:
    """Wall-clock seconds left, as the worker estimates them (``Run.eta``: from the pace of its
    progress, gridweb.runs.execution.EtaEstimate); None while it is estimating or not running."""
    if run.status != Status.RUNNING or run.eta is None:
        return None
    return max(0.0, (run.eta - timezone.now()).total_seconds())


def gantt_config(run: Run) -> dict[str, Any]:
    """What static/runs/gantt.js needs to draw this run (a JSON script element on the page)."""
    return {
        "run": run.pk,
        "attempt": run.attempt,  # whose chunks the stream sends (a restarted run streams anew)
        "status": run.status,
        "finished": run.finished,
        "segmentsUrl": reverse("runs:segments", args=[run.pk]),
        "tileUrl": reverse("runs:gantt_tile", args=[run.pk]),
        "jobUrl": reverse("runs:gantt_job", args=[run.pk]),
        "atUrl": reverse("runs:gantt_at", args=[run.pk]),
        "kindColours": list(gantt_tiles.KIND_COLOURS),
        "wsPath": f"/ws/runs/{run.pk}/",
        "clusters": cluster_layout(run),
        "kinds": list(KIND_NAMES),
        **stream_labels(run),
        "segmentsCount": run.segments_count,
        "progress": run.progress,
        "simTime": run.sim_time,
    }


def run_page_context(request: HttpRequest, run: Run, comment_form: CommentForm | None = None) -> dict[str, Any]:
    sweep = run.sweep if run.sweep is not None and run.sweep.can_view(request.user) else None
    can_edit = run.can_edit(request.user)
    return {
        "run": run,
        "shaky_help": SHAKY_RULE,
        "can_edit": can_edit,
        "can_cancel": can_edit and run.status in (Status.QUEUED, Status.RUNNING),
        "can_comment": request.user.is_authenticated,
        "metrics": comparing.metrics_table([run.summary]) if run.summary else [],
        "replications": (run.summary or {}).get("replications"),
        "replication_choices": range(int((run.summary or {}).get("replications") or 1)),
        "job_counts": [f"{count:,} {status}" for status, count in ((run.summary or {}).get("job_counts") or {}).items()
                       if count],
        "notes": (run.summary or {}).get("notes") or [],
        "has_plots": run.status == Status.DONE,
        "job_statuses": STATUS_NAMES,
        "scenario_json": json.dumps(run.spec, indent=2),
        "comments": run.comments.select_related("author"),
        "comment_form": comment_form or CommentForm(),
        "exports": [(export.label, reverse("runs:export", args=[run.pk, kind]), kind)
                    for kind, export in EXPORTS.items() if export.available(run)],
        "fork_url": f"/scenarios/new/?from_run={run.pk}",
        "gantt": gantt_config(run),
        "eta": eta_seconds(run),
        "sweep": sweep,
        "citation": citing.citation(run, request.build_absolute_uri(reverse("runs:run", args=[run.pk]))),
        "sharing_form": SharingForm(initial={"visibility": run.visibility, "group": run.group,
                                             "tags": ", ".join(run.tags or [])}, user=request.user)
        if can_edit else None,
    }


@require_safe
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = viewable_run(request, pk)
    return render(request, "runs/run_detail.html", run_page_context(request, run))


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = owned_run(request, pk)
    from .services import CannotCancel, cancel_run  # the runs backend; imported when used

    try:
        cancelled = cancel_run(run, request.user)
    except CannotCancel as exc:
        messages.info(request, str(exc))
    else:
        messages.success(request, "The run was cancelled." if cancelled.status == Status.CANCELLED else
                         "Cancellation requested: the run stops at its next progress report.")
    return redirect("runs:run", pk=run.pk)


@require_POST
def run_delete(request: HttpRequest, pk: int) -> HttpResponse:
    run = owned_run(request, pk)
    if not run.finished:
        messages.error(request, "Cancel the run before deleting it: it is still " + run.status + ".")
        return redirect("runs:run", pk=run.pk)
    name = run.name
    run.delete()
    messages.success(request, f"Run “{name}” was deleted.")
    return redirect("runs:gallery")


@require_POST
def run_share(request: HttpRequest, pk: int) -> HttpResponse:
    """The owner changes who sees the run (private, group or public) and its tags, from its page."""
    run = owned_run(request, pk)
    form = SharingForm(request.POST, user=request.user)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return redirect(reverse("runs:run", args=[run.pk]) + "#sharing")
    run.visibility = form.cleaned_data["visibility"]
    run.group = form.cleaned_data["group"] or run.group
    run.tags = form.cleaned_data["tags"]
    run.save(update_fields=["visibility", "group", "tags", "updated"])
    messages.success(request, f"The run is now {run.get_visibility_display().lower()}"
                              + (f" ({run.group.name})" if run.visibility == "group" and run.group else "") + ".")
    return redirect(reverse("runs:run", args=[run.pk]) + "#sharing")


@require_POST
def run_comment(request: HttpRequest, pk: int) -> HttpResponse:
    run = viewable_run(request, pk)
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("runs:run", args=[run.pk]))
    form = CommentForm(request.POST)
    if not form.is_valid():
        context = run_page_context(request, run, comment_form=form)
        return render(request, "runs/run_detail.html", context, status=400)
    Comment.objects.create(run=run, author=request.user, text=form.cleaned_data["text"])
    return redirect(reverse("runs:run", args=[run.pk]) + "#comments")


@require_safe
def run_segments(request: HttpRequest, pk: int) -> HttpResponse:
    """The run's Gantt segments as compact columnar JSON (one request for a finished run)."""
    run = viewable_run(request, pk)
    body = json.dumps(segments_payload(run), separators=(",", ":"), allow_nan=False)
    response = HttpResponse(body, content_type="application/json")
    response["Cache-Control"] = "private, no-cache"
    return response


def gantt_frame(what: str, run: Run, query) -> HttpResponse:
    """A level-of-detail answer as a binary frame (gridweb.runs.gantt_tiles); 400 naming a bad
    parameter, 409 with the reason when the replication asked for cannot be drawn now."""
    try:
        body = gantt_tiles.answer(what, run, query)
    except gantt_tiles.BadParameter as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    except gantt_tiles.ReplicationUnavailable as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    response = HttpResponse(body, content_type="application/octet-stream")
    response["Cache-Control"] = "private, no-cache"
    return response


@require_safe
def run_gantt_tile(request: HttpRequest, pk: int) -> HttpResponse:
    """What the Gantt draws for a window of time at a size in pixels: its segments, or an
    occupancy raster when they are too many (a binary frame; gridweb.runs.gantt_tiles)."""
    return gantt_frame("tile", viewable_run(request, pk), request.GET)


@require_safe
def run_gantt_job(request: HttpRequest, pk: int) -> HttpResponse:
    """Every Gantt segment of one job (``stream``, ``job_id``), to highlight it at any zoom."""
    return gantt_frame("job", viewable_run(request, pk), request.GET)


@require_safe
def run_gantt_at(request: HttpRequest, pk: int) -> HttpResponse:
    """The Gantt segments on one processor of a cluster at a time (a click on a raster)."""
    return gantt_frame("at", viewable_run(request, pk), request.GET)


@require_safe
def run_plots(request: HttpRequest, pk: int) -> JsonResponse:
    """The run page's plots as Bokeh JSON items, fetched once the Gantt is drawn (building them
    takes longer than the rest of the page)."""
    run = viewable_run(request, pk)
    arrays = result_arrays(run) if run.status == Status.DONE else None
    figures = plots.run_figures(arrays)
    return JsonResponse({"plots": {name: json_item(figure) for name, figure in figures.items()}})


@require_safe
def run_jobs(request: HttpRequest, pk: int) -> JsonResponse:
    """A page of the run's job rows as JSON (filtered, sorted), for the run page's jobs table."""
    run = viewable_run(request, pk)
    from . import exports  # the runs backend; imported when used

    try:
        body = jobs_page(run, request.GET)
    except BadParameter as exc:
        return JsonResponse({"error": str(exc), "parameter": exc.name, "reason": exc.reason}, status=400)
    except exports.ExportUnavailable as exc:
        return JsonResponse({"error": str(exc)}, status=409)
    response = JsonResponse(body, json_dumps_params={"separators": (",", ":"), "allow_nan": False})
    response["Cache-Control"] = "private, no-cache"
    return response


@require_safe
def run_export(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    run = viewable_run(request, pk)
    if kind not in EXPORTS:
        raise Http404(f"No export named {kind!r}; there are {', '.join(EXPORTS)}.")
    export = EXPORTS[kind]
    if export.needs_result and run.status != Status.DONE:
        return HttpResponse(f"Run {run.pk} is {run.status}: it has no results to export.",
                            status=409, content_type="text/plain; charset=utf-8")
    from . import exports  # the runs backend; imported when used

    options = {}
    if kind in exports.PRECISION_DEFAULT:
        try:
            options["precision"] = exports.precision(kind, request.GET.get("precision"))
        except ValueError as exc:
            return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    try:
        body = getattr(exports, export.function)(run, **options)
    except exports.ExportUnavailable as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    return exports.download(request, body, export.content_type, f"run-{run.pk}-{kind}")


# --- Gallery ---------------------------------------------------------------------------------------

@require_safe
def run_index(request: HttpRequest) -> HttpResponse:
    """``/runs/``: the gallery lists every run the user may view."""
    return redirect("runs:gallery")


@require_safe
def gallery(request: HttpRequest) -> HttpResponse:
    visible = Run.objects.visible_to(request.user).select_related("owner").order_by("-created")
    form = gallery_filters.GalleryFilters(request.GET or None)
    filtered = visible.filter(sweep__isnull=True)  # sweep points: on their sweep's page, or when asked for
    if form.is_bound and form.is_valid():
        filtered = gallery_filters.filter_runs(visible, form.cleaned_data)
    elif form.is_bound:
        filtered = visible.none()  # the errors say what to fix; no half-applied filter
    curated = filtered.filter(curated=True).order_by("pk")
    page = Paginator(filtered.filter(curated=False), GALLERY_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "runs/gallery.html", {
        "form": form,
        "curated": curated,
        "page": page,
        "total": filtered.count(),
        "choices": gallery_filters.filter_choices(visible),
        "query": query.urlencode(),
        "filtering": form.is_bound,
        "hidden_points": 0 if form.is_bound and form.is_valid() and form.cleaned_data.get("points")
        else visible.filter(sweep__isnull=False).count(),
    })


# --- Compare -----------------------------------------------------------------------------------------

#: Runs that ended without a result: nothing to compare, so the picker leaves them out.
NO_RESULT = (Status.FAILED, Status.CANCELLED)


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    ids, error = comparing.parse_run_ids(request.GET.getlist("runs"))
    if error:
        return HttpResponseBadRequest(error, content_type="text/plain; charset=utf-8")
    visible = Run.objects.visible_to(request.user).select_related("owner")
    found = {run.pk: run for run in visible.filter(pk__in=ids)}
    if len(found) != len(ids):
        raise Http404("No such run.")  # the same answer for runs that exist but are not yours to see
    # A failed or cancelled run asked for by id is left out and named on the page.
    without_result = [found[pk] for pk in ids if found[pk].status in NO_RESULT]
    runs = [found[pk] for pk in ids if found[pk].status not in NO_RESULT]
    context: dict[str, Any] = {
        "runs": runs,
        "without_result": without_result,
        "pick": visible.exclude(status__in=NO_RESULT).order_by("-created")[:60] if len(runs) < 2 else [],
    }
    if len(runs) >= 2:
        labels = [f"#{run.pk} {run.name}" for run in runs]
        script, divs = plots.embed(plots.compare_figures(
            [(label, result_arrays(run) if run.status == Status.DONE else None) for label, run in zip(labels, runs)]))
        context.update({
            "metrics": comparing.metrics_table([run.summary for run in runs]),
            "different_jobs": comparing.different_jobs([(f"#{run.pk}", run.summary) for run in runs]),
            "paired": comparing.paired_table(runs),
            "shaky_help": SHAKY_RULE,
            "diff": comparing.scenario_diff([run.spec for run in runs]),
            "same_scenario": len({run.scenario_hash for run in runs}) == 1 and bool(runs[0].scenario_hash),
            "plot_script": script,
            "plot_divs": divs,
            "gantts": [{**gantt_config(run), "title": f"#{run.pk} {run.name}"} for run in runs],
        })
    return render(request, "runs/compare.html", context)


# --- Sweeps ------------------------------------------------------------------------------------------

@require_safe
def sweep_list(request: HttpRequest) -> HttpResponse:
    sweeps = (Sweep.objects.visible_to(request.user).select_related("owner")
              .annotate(points=Count("runs"), done=Count("runs", filter=Q(runs__status=Status.DONE)),
                        failed=Count("runs", filter=Q(runs__status=Status.FAILED)))
              .order_by("-created"))
    return render(request, "runs/sweep_list.html", {"sweeps": sweeps})


def sweep_points(sweep: Sweep, runs: list[Run]) -> list[dict[str, Any]]:
    """``[{"values": {path: value}, "metrics": {name: {mean, ci_low, ci_high}}, "run": Run|None,
    "status": str}]``, one per point.

    From ``Sweep.aggregate`` once the sweep is aggregated (gridweb/runs/sweeps.py: rows of
    ``parameters``, ``run``, ``status`` and ``metrics``), else from each finished point's own
    summary while the sweep is still running.
    """
    by_id = {run.pk: run for run in runs}
    points = [{"values": row.get("parameters") or {}, "metrics": row.get("metrics") or {},
               "run": by_id.get(row.get("run")), "status": row.get("status", "")}
              for row in sweep.aggregate or [] if isinstance(row, dict)]
    if points:
        return points
    return [{"values": run.sweep_point, "metrics": (run.summary or {}).get("metrics") or {}, "run": run,
             "status": run.status} for run in runs if run.finished]


@require_safe
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sweep = get_object_or_404(Sweep.objects.select_related("owner"), pk=pk)
    if not sweep.can_view(request.user):
        raise Http404("No such sweep.")
    runs = list(sweep.runs.visible_to(request.user).order_by("pk"))
    points = sweep_points(sweep, runs)
    parameters = list(sweep.parameters or {})
    metric_names = comparing.metric_order({m for p in points for m in p["metrics"]})
    metric = request.GET.get("metric") or ("mean_wait" if "mean_wait" in metric_names else
                                           (metric_names[0] if metric_names else ""))
    x_parameter = request.GET.get("x") or (parameters[0] if parameters else "")
    if metric and metric not in metric_names:
        return HttpResponseBadRequest(f"metric: {metric!r} is not a metric of this sweep", content_type="text/plain")
    if x_parameter and x_parameter not in parameters:
        return HttpResponseBadRequest(f"x: {x_parameter!r} is not a swept parameter", content_type="text/plain")
    figures = {"aggregate": plots.sweep_figure(points, x_parameter, metric)} if points and metric and x_parameter else {}
    script, divs = plots.embed(figures)
    statuses = {status: sum(1 for r in runs if r.status == status) for status in Status.values}
    chosen = comparing.metrics_table([{"metrics": {metric: p["metrics"].get(metric)},
                                       "replications": (p["metrics"].get(metric) or {}).get("replications")}
                                      for p in points])
    cells = chosen[0].cells if chosen else [comparing.MetricCell() for _ in points]
    table = [{"values": [p["values"].get(k) for k in parameters], "run": p["run"], "cell": cell,
              "status": p["status"] or (p["run"].status if p["run"] else "")} for p, cell in zip(points, cells)]
    tabulated = {p["run"].pk for p in points if p["run"] is not None}
    pending = [{"values": [run.sweep_point.get(k) for k in parameters], "run": run}
               for run in runs if run.pk not in tabulated]
    return render(request, "runs/sweep_detail.html", {
        "sweep": sweep, "runs": runs, "parameters": parameters, "statuses": statuses,
        "finished": sweep.status in FINISHED, "finished_points": sum(1 for r in runs if r.status in FINISHED),
        "metric": metric, "metric_names": metric_names, "x_parameter": x_parameter,
        "points": points, "table": table, "pending": pending, "plot_script": script, "plot_divs": divs,
        "shaky_help": SHAKY_RULE,
        "scenario": sweep.scenario if sweep.scenario is not None and sweep.scenario.can_view(request.user) else None,
        "swept": [(path, plots.parameter_label(path), values) for path, values in (sweep.parameters or {}).items()],
    })


@require_safe
def sweep_export(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    """``sweep.csv`` / ``sweep.json``: every point's parameters, run and metrics with their
    intervals (the runs the user may view)."""
    sweep = viewable_sweep(request, pk)
    from . import exports  # the runs backend; imported when used

    points = sweep_points(sweep, list(sweep.runs.visible_to(request.user).order_by("pk")))
    if kind == "sweep.csv":
        body, content_type = exports.sweep_csv(sweep, points), "text/csv; charset=utf-8"
    elif kind == "sweep.json":
        scenario = sweep.scenario if sweep.scenario is not None and sweep.scenario.can_view(request.user) else None
        url = request.build_absolute_uri(f"/scenarios/{scenario.pk}/") if scenario else None
        body, content_type = exports.sweep_json(sweep, points, url), "application/json"
    else:
        raise Http404(f"No sweep export named {kind!r}; there are sweep.csv and sweep.json.")
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="sweep-{sweep.pk}-{kind}"'
    return response


def viewable_sweep(request: HttpRequest, pk: int) -> Sweep:
    """The sweep, if ``request.user`` may view it; 404 otherwise."""
    sweep = get_object_or_404(Sweep.objects.select_related("owner"), pk=pk)
    if not sweep.can_view(request.user):
        raise Http404("No such sweep.")
    return sweep


@require_safe
def sweep_status(request: HttpRequest, pk: int) -> JsonResponse:
    """What the sweep page polls while points run: the sweep's status and each point's.

    ``{"id", "status", "finished", "finished_points", "counts": {status: n},
    "points": [{"run", "status", "progress"}]}`` (only the runs the user may view)."""
    sweep = viewable_sweep(request, pk)
    runs = list(sweep.runs.visible_to(request.user).order_by("pk").values("pk", "status", "progress"))
    counts = {status: sum(1 for r in runs if r["status"] == status) for status in Status.values}
    response = JsonResponse({
        "id": sweep.pk, "status": sweep.status, "finished": sweep.status in FINISHED,
        "finished_points": sum(1 for r in runs if r["status"] in FINISHED), "counts": counts,
        "points": [{"run": r["pk"], "status": r["status"], "progress": r["progress"]} for r in runs],
    })
    response["Cache-Control"] = "no-store"
    return response


# --- Starting a sweep from the browser ------------------------------------------------------------

def _sweep_scenario(request: HttpRequest) -> Scenario | None:
    """The scenario named by ``?scenario=`` if the user may view it (404 otherwise); None when
    no scenario is named."""
    raw = request.GET.get("scenario", "").strip()
    if not raw:
        return None
    try:
        pk = int(raw)
    except ValueError:
        raise Http404("scenario must be a scenario number") from None
    return get_object_or_404(Scenario.objects.visible_to(request.user), pk=pk)


def _validated(scenario: Scenario, user):
    """The engine's scenario of a saved one (defaults filled in), or None if it no longer validates."""
    try:
        return validate_spec(scenario.spec, user)
    except SpecInvalid:
        return None


@login_required
@require_http_methods(["GET", "POST"])
def sweep_new(request: HttpRequest) -> HttpResponse:
    """``/sweeps/new/?scenario=<id>``: the form that starts a sweep of a scenario the user may
    view (without ``scenario``: pick one). POST creates the sweep through
    ``services.create_sweep`` and opens its page; errors are shown beside the row or field
    they concern, with status 400, and nothing is created."""
    scenario = _sweep_scenario(request)
    if scenario is None:
        if request.method == "POST":
            raise Http404("Name the scenario to sweep: /sweeps/new/?scenario=<id>.")
        scenarios = (Scenario.objects.visible_to(request.user).select_related("owner").defer("spec")
                     .order_by("-updated")[:200])
        return render(request, "runs/sweep_pick.html", {"scenarios": scenarios})

    user = request.user
    own = scenario.owner_id == user.pk
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        form = sweep_form.SweepForm(request.POST, user=user)
        rows = sweep_form.parameter_rows(request.POST)
        errors = sweep_form.check_rows(rows)
        if not form.is_valid():
            for name, found in form.errors.items():
                errors.setdefault(name if name != "__all__" else "", []).extend(str(m) for m in found)
        if not errors:
            from .services import create_sweep  # the runs backend; imported when used

            data = form.cleaned_data
            overrides = form.overrides()
            try:
                sweep = create_sweep(user, sweep_form.with_overrides(scenario.spec, overrides),
                                     sweep_form.grid_of(rows), name=data["name"].strip(),
                                     visibility=data["visibility"], group=data["group"], tags=data["tags"],
                                     scenario=scenario)
            except SpecInvalid as exc:
                errors = sweep_form.place_errors(exc.errors, rows, set(overrides))
            else:
                messages.success(request, f"Sweep “{sweep.name}” started: {sweep.runs.count()} points.")
                return redirect("runs:sweep", pk=sweep.pk)
    else:
        group = scenario.group if own and scenario.group is not None else default_group(user)
        form = sweep_form.SweepForm(user=user, initial={
            "name": f"{scenario.name} sweep"[:200], "tags": ", ".join(scenario.tags),
            "visibility": Visibility.PRIVATE, "group": group.pk if group else None})
        rows = []
    if not rows:
        rows = [sweep_form.ParameterRow(0)]
    for row in rows:
        row.errors = list(dict.fromkeys([*row.errors, *errors.get(row.key, [])]))
    engine_scenario = _validated(scenario, user)
    parameters = sweep_form.sweepable_parameters(engine_scenario)
    replications = engine_scenario.run.replications if engine_scenario is not None else None
    points = 1
    for row in rows:
        points *= len(row.values)
    context = {
        "scenario": scenario, "form": form, "rows": rows, "errors": {
            **{key: found for key, found in errors.items() if key and not key.startswith("param-")},
            "general": errors.get("", [])},
        "error_count": sum(len(found) for found in errors.values()),
        "suggestions": parameters,
        "scenario_replications": replications,
        "points": points if all(row.values for row in rows) else None,
        "config": {"suggestions": {p["path"]: p for p in parameters}, "maxPoints": sweep_form.MAX_SWEEP_POINTS,
                   "scenarioReplications": replications, "nextRow": max(row.index for row in rows) + 1},
    }
    return render(request, "runs/sweep_form.html", context, status=400 if errors else 200)
