"""Admin pages for runs, sweeps and comments (stored chunks and result arrays are not shown:
they are large and only the engine's writers should produce them)."""

from django.contrib import admin

from .models import Comment, Run, Sweep


class CommentInline(admin.TabularInline):
    model = Comment
    extra = 0
    raw_id_fields = ("author",)
    readonly_fields = ("created",)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "status", "curated", "visibility", "policy", "platform", "segments_count",
                    "created")
    list_filter = ("status", "curated", "visibility", "group")
    search_fields = ("name", "description", "owner__username", "policy", "platform", "scenario_hash")
    raw_id_fields = ("owner", "scenario", "sweep")
    list_editable = ("curated",)
    exclude = ("thumbnail",)
    readonly_fields = ("spec", "sweep_point", "status", "progress", "sim_time", "started_at", "finished_at", "error",
                       "task_id", "cancel_requested", "seed", "scenario_hash", "engine_version", "summary",
                       "segments_count", "last_seq", "created", "updated")
    inlines = [CommentInline]


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "status", "visibility", "created", "finished_at")
    list_filter = ("status", "visibility")
    search_fields = ("name", "description", "owner__username")
    raw_id_fields = ("owner", "scenario")
    readonly_fields = ("spec", "parameters", "aggregate", "status", "finished_at", "created", "updated")


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ("run", "author", "created")
    search_fields = ("text", "author__username", "run__name")
    raw_id_fields = ("run", "author")
