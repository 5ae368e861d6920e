"""Refusals: a view's answer other than what it was asked for, and how each kind is sent.

A view raises a Refusal (status and a plain one-line message, never a secret); the view
guard (`core.view_guard`) answers it in the view's dialect: JSON `{"error": message}` for
the APIs, a page or plain text for the rest.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control


class Refusal(Exception):
    """A view's answer other than what was asked: status and a plain one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def json_refusal(_request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """An API's answer to a Refusal."""
    return json_error(refusal.status, refusal.message)


def text_refusal(_request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """A plain-text answer to a Refusal (where a client expects a file, not a page)."""
    return HttpResponse(refusal.message + "\n", status=refusal.status,
                        content_type="text/plain; charset=utf-8")


def kept_private(answer: HttpResponse) -> HttpResponse:
    """One person's answer: never stored by a shared cache, nor by a browser on a shared
    machine after logout."""
    patch_cache_control(answer, private=True, no_store=True)
    return answer
