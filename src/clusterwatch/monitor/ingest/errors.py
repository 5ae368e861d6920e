"""A refused request, as the status and the readable reason the API replies with."""

from __future__ import annotations

from typing import Optional

from django.http import JsonResponse

# Reasons quote values from the record; a quoted 500 KB string helps nobody.
DETAIL_LIMIT = 500


class Rejection(Exception):
    """Raised anywhere in ingest; the view turns it into `{"error": ..., "detail": ...}`."""

    def __init__(self, status: int, error: str, detail: str,
                 headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.detail = shorten(detail)
        self.headers = dict(headers or {})

    def response(self) -> JsonResponse:
        reply = JsonResponse({"error": self.error, "detail": self.detail}, status=self.status)
        for name, value in self.headers.items():
            reply[name] = value
        return reply


def shorten(text: str, limit: int = DETAIL_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"
