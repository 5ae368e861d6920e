"""In-process helpers of the usage pages' tests: a logged-in client, what a page says."""

from __future__ import annotations

import html
import re

from django.contrib.auth.models import User
from django.test import Client


def client_of(name: str, *, staff: bool = False) -> Client:
    user = User.objects.create_user(name, password="x-not-used", is_staff=staff)
    client = Client()
    client.force_login(user)
    return client


def without_csrf(content: bytes) -> bytes:
    """The page without the logout form's token, which changes on every answer."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", content)


def text_of(answer: object) -> str:
    """The page's visible text, tags dropped and spaces collapsed."""
    content = answer.content.decode()  # type: ignore[attr-defined]
    body = re.sub(r"<style\b.*?</style>", " ", content, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def job_ids(answer: object) -> list[str]:
    """The job ids of the table's rows, top to bottom."""
    content = answer.content.decode()  # type: ignore[attr-defined]
    return re.findall(r'<tr><td class="nowrap"><a href="/usage/jobs/([^/]+)/">', content)
