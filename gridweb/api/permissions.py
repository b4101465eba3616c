"""Who may do what through the API (gridweb/sharing.py's rules).

Objects a user may not view are outside the view's queryset (``visible_to``), so they
answer 404 and their existence does not leak. Of what a user may view, only the owner (or
a superuser) changes or deletes; anyone who may view may also fork and comment.
"""

from __future__ import annotations

from rest_framework import permissions

# Actions on an object that viewing is enough for (they create something of the user's own).
VIEWER_ACTIONS = frozenset({"fork", "comments"})


class OwnerEditsViewersRead(permissions.BasePermission):
    """Reading for everyone (the queryset already hides what they may not view); writing needs a
    logged-in user; changing or deleting an object needs its owner."""

    message = "only the owner may change or delete this"

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in permissions.SAFE_METHODS or getattr(view, "action", None) in VIEWER_ACTIONS:
            return True
        return obj.can_edit(request.user)
