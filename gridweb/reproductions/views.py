"""The reproductions pages: one section per paper, a page per reproduction, its files, its status."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_POST, require_safe

from gridweb.runs.models import Status
from gridweb.scenarios.forms import SharingForm
from gridweb.sharing import Visibility, default_group
from simengine import reproductions as recipes
from simengine.reproductions import doc

from .execution import TooManyActive, check_active, create_reproduction, describe, file_response, short_title
from .models import Reproduction

class RerunForm(SharingForm):
    """Which paper, quick or full, and whom the new reproduction is shared with."""

    recipe = forms.ChoiceField(choices=[(name, name) for name in recipes.RECIPES])
    quick = forms.TypedChoiceField(choices=[("1", "quick (seconds)"), ("0", "full (minutes to an hour)")],
                                   coerce=lambda v: v == "1", initial="1", label="size")


def viewable(request: HttpRequest, pk: int) -> Reproduction:
    rep = get_object_or_404(Reproduction.objects.select_related("owner", "group"), pk=pk)
    if not rep.can_view(request.user):
        raise Http404("No such reproduction.")
    return rep


def latest_per_paper(user) -> list[dict[str, Any]]:
    """Each paper (recipe) with its newest done reproduction ``user`` may see -- a full one if
    there is one (only the full run stands for the paper), else the demo set's quick one, else any
    -- and the tally of the full run shipped with GridWeb (docs/reproductions/NAME-claims.csv)."""
    done = Reproduction.objects.visible_to(user).filter(status=Status.DONE).order_by("-finished_at")
    papers = []
    for name in recipes.RECIPES:
        mine = done.filter(recipe=name)
        latest = mine.filter(quick=False).first() or mine.filter(curated=True).first() or mine.first()
        info = describe(name)
        papers.append({**info, "short": short_title(info["title"]), "latest": latest, "tally": tally_text(latest),
                       "shipped": shipped_tally(name)})
    return papers


def counts_text(t: dict[str, int]) -> str:
    """"12 of 20 claims pass (3 fail, 5 not reproducible)"."""
    rest = [f"{t.get(recipes.FAIL, 0)} fail", f"{t.get(recipes.NOT_REPRODUCIBLE, 0)} not reproducible"]
    return f"{t.get(recipes.PASS, 0)} of {sum(t.values())} claims pass ({', '.join(rest)})"


def tally_text(rep: Reproduction | None) -> str:
    """The claim counts of a done reproduction ("" for none), a quick one saying so."""
    if rep is None or not rep.tally:
        return ""
    return counts_text(rep.tally) + (" in a quick run" if rep.quick else "")


def shipped_tally(name: str) -> str:
    """The claim counts of the full run whose claims.csv ships in docs/reproductions/ (the one
    docs/reproductions.md's tables are made from); "" if there is none."""
    path = doc.evidence(name)
    if not path.exists():
        return ""
    claims = recipes.read_claims(path)
    return counts_text(recipes.verdict_counts(claims)) + " in the full run"


@require_safe
def reproduction_list(request: HttpRequest) -> HttpResponse:
    papers = latest_per_paper(request.user)
    recent = Reproduction.objects.visible_to(request.user).select_related("owner").order_by("-created")[:30]
    group = default_group(request.user)
    form = RerunForm(user=request.user, initial={"group": group,
                                                 "visibility": Visibility.GROUP if group else Visibility.PRIVATE})
    return render(request, "reproductions/list.html", {"papers": papers, "recent": recent, "form": form})


@require_POST
def reproduction_rerun(request: HttpRequest) -> HttpResponse:
    """Start a reproduction (quick or full) as the user: a group member re-running a paper."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    form = RerunForm(request.POST, user=request.user)
    if not form.is_valid():
        for field, errs in form.errors.items():
            for err in errs:
                messages.error(request, f"{field}: {err}")
        return redirect("reproductions:list")
    try:
        check_active(request.user)
    except TooManyActive as exc:
        messages.error(request, str(exc))
        return redirect("reproductions:list")
    data = form.cleaned_data
    rep = create_reproduction(request.user, data["recipe"], quick=data["quick"], visibility=data["visibility"],
                              group=data["group"])
    return redirect("reproductions:detail", pk=rep.pk)


@require_safe
def reproduction_detail(request: HttpRequest, pk: int) -> HttpResponse:
    rep = viewable(request, pk)
    claims = rep.claims
    return render(request, "reproductions/detail.html", {
        "rep": rep, "paper": describe(rep.recipe), "claims": claims, "tally": tally_text(rep),
        "csv_files": [f for f in rep.files if f.endswith(".csv")],
        "form": RerunForm(user=request.user, initial={"recipe": rep.recipe, "quick": "1" if rep.quick else "0",
                                                      "group": default_group(request.user)}),
    })


@require_safe
def reproduction_status(request: HttpRequest, pk: int) -> JsonResponse:
    """What the page polls while the reproduction runs."""
    rep = viewable(request, pk)
    response = JsonResponse({"id": rep.pk, "status": rep.status, "finished": rep.finished,
                             "progress": rep.progress, "stage": rep.stage, "log": rep.log[-4000:],
                             "error": rep.error})
    response["Cache-Control"] = "no-store"
    return response


@require_safe
@xframe_options_sameorigin  # the page shows each figure (a standalone Bokeh page) in a frame
def reproduction_file(request: HttpRequest, pk: int, name: str) -> HttpResponse:
    return file_response(viewable(request, pk), name, attachment=name.endswith(".csv"))
