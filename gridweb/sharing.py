"""Ownership and visibility shared by scenarios, traces, runs and sweeps.

Every shared object has an owner, an optional research group (a Django group) and a
visibility: ``private`` (owner only), ``group`` (members of its group) or ``public``
(everyone, also visitors who are not logged in). Only the owner (or a superuser) edits
or deletes; whoever can view can fork and comment.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, Group
from django.db import models
from django.db.models import Q


class Visibility(models.TextChoices):
    PRIVATE = "private", "Private (only me)"
    GROUP = "group", "My group"
    PUBLIC = "public", "Public"


class SharedQuerySet(models.QuerySet):
    def visible_to(self, user) -> SharedQuerySet:
        """What ``user`` may view."""
        if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
            return self.filter(visibility=Visibility.PUBLIC)
        if user.is_superuser:
            return self.all()
        return self.filter(
            Q(owner=user)
            | Q(visibility=Visibility.PUBLIC)
            | Q(visibility=Visibility.GROUP, group__in=user.groups.all())
        )

    def editable_by(self, user) -> SharedQuerySet:
        """What ``user`` may change or delete."""
        if user is None or not user.is_authenticated:
            return self.none()
        return self.all() if user.is_superuser else self.filter(owner=user)


#: tags of a run, sweep, scenario, trace or reproduction: how many, and characters each (the
#: builder's form and the API take the same)
MAX_TAGS = 20
MAX_TAG_LENGTH = 50


class SharedModel(models.Model):
    """Owner, group, visibility, name, description and tags (abstract)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.PRIVATE)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)  # list of short strings
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = SharedQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.name

    def can_view(self, user) -> bool:
        if self.visibility == Visibility.PUBLIC:
            return True
        if user is None or not user.is_authenticated:
            return False
        if user.is_superuser or self.owner_id == user.pk:
            return True
        return (
            self.visibility == Visibility.GROUP
            and self.group_id is not None
            and user.groups.filter(pk=self.group_id).exists()
        )

    def can_edit(self, user) -> bool:
        return bool(user is not None and user.is_authenticated and (user.is_superuser or self.owner_id == user.pk))


def default_group(user) -> Group | None:
    """The group a new object of ``user`` is shared with: their first group by name."""
    return user.groups.order_by("name").first() if user is not None and user.is_authenticated else None
