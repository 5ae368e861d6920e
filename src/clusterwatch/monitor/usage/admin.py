"""The usage reports in the staff-only admin: kept summaries (evidence: read-only) and the
API tokens (made by `create_usage_token`, so never added here; revoked here; digest hidden)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from clusterwatch.monitor.core.admin import ReadOnlyAdmin, revoke
from clusterwatch.monitor.usage.models import KeptSummary, UsageApiToken


@admin.register(KeptSummary)
class KeptSummaryAdmin(ReadOnlyAdmin):
    list_display = ("jobid", "user", "account", "state", "end", "cpu_efficiency",
                    "memory_efficiency", "warning_codes")
    search_fields = ("jobid", "user", "account")
    list_filter = ("state",)
    ordering = ("-id",)


@admin.register(UsageApiToken)
class UsageApiTokenAdmin(admin.ModelAdmin):
    fields = ("prefix", "user", "created_at", "last_used_at", "revoked_at", "note")
    readonly_fields = ("prefix", "user", "created_at", "last_used_at", "revoked_at")
    list_display = ("prefix", "user", "created_at", "last_used_at", "revoked_at", "note")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "note", "user__username")
    actions = (revoke,)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
