"""The view guard (clusterwatch.monitor.core.view_guard): the order of its checks, each
dialect's refusals, private caching, and who it lets in."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from clusterwatch.monitor.core import api_tokens
from clusterwatch.monitor.core.asking import LOGIN_NEEDED
from clusterwatch.monitor.core.refusals import Refusal, json_refusal, text_refusal
from clusterwatch.monitor.core.view_guard import Entry, Feature, guarded

pytestmark = pytest.mark.django_db
switch = {"on": True}
FEATURE = Feature(lambda: switch["on"], "the feature is off")


@pytest.fixture(autouse=True)
def _feature_on() -> None:
    switch["on"] = True


def request(method: str = "get", user: Any = None, **headers: str) -> HttpRequest:
    made: HttpRequest = getattr(RequestFactory(), method)("/thing/?x=1", headers=headers)
    made.user = user if user is not None else AnonymousUser()
    return made


def body(request: HttpRequest) -> HttpResponse:
    if request.GET.get("x") == "refuse":
        raise Refusal(400, "not a thing")
    return HttpResponse("the thing")


def test_a_json_view_answers_the_feature_off_before_the_method() -> None:
    view = guarded(json_refusal, feature=FEATURE, method_in_dialect=True)(body)
    switch["on"] = False
    off = view(request("post"))
    assert (off.status_code, off.content) == (404, b'{"error": "the feature is off"}')
    switch["on"] = True
    refused = view(request("post"))
    assert (refused.status_code, refused["Allow"]) == (405, "GET, HEAD")
    assert refused.content == b'{"error": "only GET"}'
    assert "no-store" in refused["Cache-Control"] and "private" in refused["Cache-Control"]


def test_a_page_refuses_the_method_first_with_djangos_bare_405() -> None:
    view = guarded(text_refusal, feature=FEATURE)(body)
    switch["on"] = False
    refused = view(request("post"))
    assert (refused.status_code, refused.content, refused["Allow"]) == (405, b"", "GET, HEAD")
    off = view(request())
    assert (off.status_code, off.content) == (404, b"the feature is off\n")
    assert "no-store" in off["Cache-Control"]


def test_a_refusal_is_answered_in_the_views_dialect() -> None:
    view = guarded(text_refusal)(body)
    factory = RequestFactory().get("/thing/", {"x": "refuse"})
    factory.user = AnonymousUser()
    answer = view(factory)
    assert (answer.status_code, answer["Content-Type"]) == (400, "text/plain; charset=utf-8")
    assert answer.content == b"not a thing\n"


def test_a_feature_may_answer_off_its_own_way() -> None:
    view = guarded(text_refusal, feature=Feature(lambda: False,
                                                 lambda _r: HttpResponse("elsewhere")))(body)
    assert view(request()).content == b"elsewhere"


def test_logged_in_sends_anonymous_visitors_to_the_login_page() -> None:
    view = guarded(text_refusal, entry=Entry.LOGGED_IN)(body)
    answer = view(request())
    assert answer.status_code == 302 and answer["Location"].endswith("?next=/thing/%3Fx%3D1")
    assert "no-store" in answer["Cache-Control"]
    assert view(request(user=User.objects.create_user("alice"))).content == b"the thing"


def test_a_script_with_an_authorization_header_is_not_sent_to_the_login_page() -> None:
    view = guarded(text_refusal, entry=Entry.LOGGED_IN_OR_SCRIPT)(body)
    assert view(request()).status_code == 302
    assert view(request(Authorization="Bearer whatever")).content == b"the thing"


def test_asker_needs_a_session_or_a_valid_api_token() -> None:
    view = guarded(json_refusal, entry=Entry.ASKER, private=False)(body)
    refused = view(request(Authorization="Bearer cwu_AAAAAAAA_" + "A" * 43))
    assert refused.status_code == 403
    assert json.loads(refused.content) == {"error": LOGIN_NEEDED}
    assert not refused.has_header("Cache-Control")
    _row, token = api_tokens.create(User.objects.create_user("allocator"))
    assert view(request(Authorization=f"Bearer {token}")).content == b"the thing"
    assert view(request(user=User.objects.create_user("alice"))).content == b"the thing"


def test_the_guarded_view_keeps_its_name_and_doc() -> None:
    def job_usage(request: HttpRequest) -> HttpResponse:
        """The doc."""
        return HttpResponse()

    view = guarded(json_refusal)(job_usage)
    assert (view.__name__, view.__doc__) == ("job_usage", "The doc.")
