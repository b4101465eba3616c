from django.contrib import admin

from .models import Reproduction


@admin.register(Reproduction)
class ReproductionAdmin(admin.ModelAdmin):
    list_display = ("pk", "recipe", "quick", "owner", "visibility", "status", "created", "finished_at")
    list_filter = ("recipe", "status", "quick", "curated", "visibility")
    readonly_fields = ("claims", "tally", "figures", "files", "location", "log")
