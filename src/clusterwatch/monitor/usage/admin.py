"""The usage reports in the staff-only admin: kept summaries (evidence: read-only), the
API tokens (made by `create_usage_token`, so never added here; revoked here; digest hidden)
and the share links (made by their jobs' owners; a job's links listed by searching its id;
revoked here, by whom recorded; digest hidden)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from clusterwatch.monitor.core.admin import ReadOnlyAdmin, revoke
from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.models import KeptSummary, ShareLink, UsageApiToken


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


@admin.action(description="Revoke the selected links")
def revoke_links(modeladmin: admin.ModelAdmin, request: HttpRequest,
                 queryset: QuerySet[ShareLink]) -> None:
    count = share_links.revoke(queryset, request.user, timezone.now())
    modeladmin.message_user(request, f"{count} link(s) revoked.", messages.SUCCESS)


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    # `digest` is left out everywhere; nothing is editable: a link is revoked, not changed.
    fields = ("jobid", "prefix", "made_by", "created_at", "expires_at", "last_used_at",
              "revoked_at", "revoked_by")
    readonly_fields = fields
    list_display = ("jobid", "prefix", "made_by", "created_at", "expires_at", "last_used_at",
                    "revoked_at", "revoked_by")
    list_filter = ("revoked_at",)
    # A job's links: search its id (exactly), or a maker, or the prefix a ticket quotes.
    search_fields = ("=jobid", "=prefix", "made_by__username")
    list_select_related = ("made_by", "revoked_by")
    ordering = ("-created_at", "-id")
    actions = (revoke_links,)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, kept: who shared what, when, is the record
