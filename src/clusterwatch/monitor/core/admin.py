"""The staff-only admin (Django's admin requires `is_staff`): tokens and stored records.

Tokens are created and shown once by `clusterwatch monitor create_host_token`, so the admin
cannot add one; it shows a token's lookup prefix, keys and state, lets staff edit its note and
revoke it, and never shows the digest. Records and their indexes are evidence: read-only.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from clusterwatch.monitor.core.models import (
    HostReport,
    HostToken,
    HostTokenKey,
    JobPush,
    LatestQueue,
    LatestReport,
    RegisteredHarvester,
)
from clusterwatch.monitor.core.registry import BUILDER_FIELDS


class ReadOnlyAdmin(admin.ModelAdmin):
    """View only; the big tables skip the full COUNT(*) on every list page."""

    show_full_result_count = False
    list_per_page = 100

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class HostTokenKeyInline(admin.TabularInline):
    model = HostTokenKey
    fields = ("key",)
    readonly_fields = ("key",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.action(description="Revoke the selected tokens")
def revoke(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
    modeladmin.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)


@admin.register(HostToken)
class HostTokenAdmin(admin.ModelAdmin):
    # `digest` is left out everywhere: not shown, not editable.
    fields = ("prefix", "created_at", "revoked_at", "note")
    readonly_fields = ("prefix", "created_at", "revoked_at")
    list_display = ("prefix", "key_list", "created_at", "revoked_at", "note")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "note", "keys__key")
    inlines = (HostTokenKeyInline,)
    actions = (revoke,)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="keys")
    def key_list(self, token: HostToken) -> str:
        return ", ".join(sorted(key.key for key in token.keys.all()))

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).prefetch_related("keys")


@admin.register(HostReport)
class HostReportAdmin(ReadOnlyAdmin):
    list_display = ("id", "key", "collected_at", "received_at", "size_bytes")
    search_fields = ("key",)
    fields = ("key", "collected_at", "received_at", "size_bytes", "record")
    readonly_fields = fields
    ordering = ("-id",)  # the primary key: no sort over the whole history


@admin.register(LatestReport)
class LatestReportAdmin(ReadOnlyAdmin):
    list_display = ("key", "collected_at", "report")
    search_fields = ("key",)


@admin.register(LatestQueue)
class LatestQueueAdmin(ReadOnlyAdmin):
    list_display = ("queue", "key", "report")
    search_fields = ("queue", "key")


@admin.register(JobPush)
class JobPushAdmin(ReadOnlyAdmin):
    list_display = ("pandaid", "workerid", "queue", "key", "at")
    search_fields = ("queue", "key")

    def get_search_results(self, request: HttpRequest, queryset: QuerySet,
                           search_term: str) -> tuple[QuerySet, bool]:
        """Also a PandaID or worker id: matched only when the term is a number, so a word
        never reaches an integer column (which some Django versions answer with a 500)."""
        found, duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term.isdigit() and int(term) < 2**63:
            found = found | queryset.filter(pandaid=int(term)) | queryset.filter(
                workerid=int(term))
        return found, duplicates


@admin.register(RegisteredHarvester)
class RegisteredHarvesterAdmin(admin.ModelAdmin):
    """The harvester registry (`clusterwatch.monitor.core.registry`): staff add, edit and remove."""

    list_display = ("key", "remote", "harvester_id", "registered_at", "note")
    list_filter = ("remote",)
    search_fields = ("key", "note")
    # What the remote builder reads is set by `register_harvester`, which checks it as the
    # builder would (absolute paths, the id, the IRI target); here it is only shown, so a
    # typo cannot leave the timer failing with 78 every five minutes.
    readonly_fields = ("registered_at", *BUILDER_FIELDS)
