"""Research groups in the admin: Django's group admin, with the members listed."""

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin
from django.contrib.auth.models import Group

from .forms import AdminLoginForm


class ResearchGroupAdmin(GroupAdmin):
    list_display = ("name", "member_list")

    @admin.display(description="members")
    def member_list(self, group: Group) -> str:
        return ", ".join(group.user_set.order_by("username").values_list("username", flat=True))


admin.site.unregister(Group)
admin.site.register(Group, ResearchGroupAdmin)

# the admin's login page is throttled like the site's (gridweb/accounts/throttle.py)
admin.site.login_form = AdminLoginForm
