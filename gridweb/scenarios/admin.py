"""Admin pages for scenarios and uploaded traces (the trace bytes are not shown or edited)."""

from django.contrib import admin

from .models import Scenario, TraceFile


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "visibility", "group", "forked_from", "updated")
    list_filter = ("visibility", "group")
    search_fields = ("name", "description", "owner__username")
    raw_id_fields = ("owner", "forked_from")
    readonly_fields = ("created", "updated")


@admin.register(TraceFile)
class TraceFileAdmin(admin.ModelAdmin):
    list_display = ("name", "original_name", "format", "jobs", "max_processors", "size", "owner", "visibility")
    list_filter = ("format", "visibility")
    search_fields = ("name", "original_name", "stored_name", "owner__username")
    raw_id_fields = ("owner",)
    exclude = ("content",)
    readonly_fields = ("stored_name", "sha256", "size", "jobs", "max_processors", "metadata", "created", "updated")
