"""The gallery's search and filters over the runs a user may view.

Everything starts from ``Run.objects.visible_to(user)``, so a filter can only narrow what the
user may see. Filters: free text (name, description, tags, owner), author (user name), tag,
policy (one of the comma-separated policy names of ``Run.policy``), platform (text in
``Run.platform``), status and a date range on the creation date. The points of parameter
sweeps are left out unless asked for (``points``): a sweep of 30 points would otherwise fill
pages of the gallery; each sweep has its own page (/sweeps/).
"""

from __future__ import annotations

import json

from django import forms
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet

from .models import Run, Status


class GalleryFilters(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    author = forms.CharField(required=False, max_length=150)
    tag = forms.CharField(required=False, max_length=100)
    policy = forms.CharField(required=False, max_length=100)
    platform = forms.CharField(required=False, max_length=200)
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *Status.choices])
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    points = forms.BooleanField(required=False, label="Sweep points")

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "must be on or after the 'From' date")
        author = data.get("author")
        if author and not get_user_model().objects.filter(username__iexact=author).exists():
            self.add_error("author", f"no user named {author!r}")
        return data


def has_tag(tag: str) -> Q:
    """Runs whose ``tags`` list holds ``tag`` as a whole item (case-insensitive).

    Matches the quoted item in the stored JSON text, which works on SQLite (no JSON
    containment there) and PostgreSQL alike; SQLite's stored JSON escapes non-ASCII letters.
    """
    quoted = json.dumps(tag, ensure_ascii=connection.vendor != "postgresql")
    return Q(tags__icontains=quoted)


def uses_policy(policy: str) -> Q:
    """``Run.policy`` lists policy names separated by commas; match one whole name."""
    p = policy.strip().lower()
    return (Q(policy__iexact=p) | Q(policy__istartswith=f"{p},") | Q(policy__iendswith=f",{p}")
            | Q(policy__icontains=f",{p},"))


def filter_runs(runs: QuerySet[Run], data: dict) -> QuerySet[Run]:
    """Narrow ``runs`` by the cleaned filter ``data`` (empty values are ignored; sweep points
    only with ``points``)."""
    if not data.get("points"):
        runs = runs.filter(sweep__isnull=True)
    if data.get("q"):
        words = data["q"].split()
        for word in words:
            runs = runs.filter(Q(name__icontains=word) | Q(description__icontains=word)
                               | Q(owner__username__iexact=word) | has_tag(word) | uses_policy(word))
    if data.get("author"):
        runs = runs.filter(owner__username__iexact=data["author"])
    if data.get("tag"):
        runs = runs.filter(has_tag(data["tag"].strip()))
    if data.get("policy"):
        runs = runs.filter(uses_policy(data["policy"]))
    if data.get("platform"):
        runs = runs.filter(platform__icontains=data["platform"].strip())
    if data.get("status"):
        runs = runs.filter(status=data["status"])
    if data.get("date_from"):
        runs = runs.filter(created__date__gte=data["date_from"])
    if data.get("date_to"):
        runs = runs.filter(created__date__lte=data["date_to"])
    return runs


def filter_choices(runs: QuerySet[Run]) -> dict[str, list[str]]:
    """What the filter inputs suggest (a datalist each): authors, tags, policies and platforms
    among the runs the user may view."""
    authors = sorted(set(runs.values_list("owner__username", flat=True)))
    tags: set[str] = set()
    policies: set[str] = set()
    platforms: set[str] = set()
    for run_tags, policy, platform in runs.values_list("tags", "policy", "platform")[:2000]:
        tags.update(t for t in (run_tags or []) if isinstance(t, str))
        policies.update(p for p in (policy or "").split(",") if p)
        if platform:
            platforms.add(platform)
    return {"authors": authors, "tags": sorted(tags), "policies": sorted(policies), "platforms": sorted(platforms)}
