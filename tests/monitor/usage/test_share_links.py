"""Share links (usage/share_links.py, web/share_views.py, web/shared_views.py) through the
Django test client over the usage site: the owner makes one on the job page, shown once;
whoever holds it sees the report (page, plots, pie, PDF) and nothing else, without a login;
a wrong, tampered, expired, revoked or closed link is one 404, byte for byte; the owner and
staff revoke; nothing the monitor logs carries a link's secret, nor does this test's output
(share_support.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from clusterwatch.monitor.core import api_tokens
from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.models import ShareLink
from clusterwatch.monitor.usage.rendering import rendered
from clusterwatch.monitor.usage.usage_report import load_report
from clusterwatch.monitor.usage.web import shared_views
from tests.monitor.usage.page_support import client_of, text_of, without_csrf
from tests.monitor.usage.share_support import Made, addresses_of, carries, get, make_link
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db
PRIVATE = ("private", "no-store")
LOGGERS = ("", "django", "django.request", "django.server", "clusterwatch")


def measured(site: UsageSite, jobid: str = "4242", **job: object) -> None:
    start, end = site.job(jobid, **job)  # type: ignore[arg-type]
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=GiB)


def untraced(answer: object) -> bool:
    headers = answer.headers  # type: ignore[attr-defined]
    return (all(word in headers.get("Cache-Control", "") for word in PRIVATE)
            and headers.get("Referrer-Policy") == "no-referrer"
            and "noindex" in headers.get("X-Robots-Tag", ""))


class Records(logging.Handler):
    """Every record of every logger, however the settings route them (django.request does
    not propagate), formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def logged() -> Iterator[Records]:
    handler = Records()
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield handler
    for logger, level in zip(loggers, levels):
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_the_owner_makes_a_link_that_shows_the_report_and_nothing_else(
        usage_site: UsageSite) -> None:
    measured(usage_site, name="hidden-name-q7")
    alice = client_of("alice")
    page = alice.get("/usage/jobs/4242/")
    assert b'<form method="post" action="/usage/jobs/4242/share"' in page.content
    assert b'<option value="7" selected>' in page.content

    made = make_link(alice, days="3")
    row = ShareLink.objects.get()
    assert (row.jobid, row.made_by.username, row.prefix) == ("4242", "alice", made.prefix)
    assert row.expires_at - row.created_at == timedelta(days=3)
    stored = " ".join(str(value) for value in ShareLink.objects.values_list().get())
    assert not carries(stored, made), "the secret is stored"
    listed = alice.get("/usage/jobs/4242/")
    assert made.prefix.encode() in listed.content and not carries(listed.content, made)

    shared = get(made)  # nobody logged in
    assert shared.status_code == 200 and untraced(shared)
    text = text_of(shared)
    assert "Job 4242 “hidden-name-q7”" in text and "User alice" in text
    assert "CPU 2 CPUs 1.00 CPUs on average" in text and "Among its peers" in text
    addresses = addresses_of(shared.content)
    addresses = [(tag, address) for tag, address in addresses
                 if address not in ("#advice",)]  # the page's own section
    elsewhere = [tag for tag, address in addresses if not address.startswith(made.path)]
    assert elsewhere == [], "the shared page links outside its link"
    under = sorted(address[len(made.path):] for _tag, address in addresses)
    assert under == ["pdf", "pie", "plot/cpu", "plot/cpu_time", "plot/memory",
                     "plot/open_files", "plot/threads"]
    assert b"csrfmiddlewaretoken" not in shared.content and b"Log out" not in shared.content

    types = {}
    for tail in under:
        answer = get(made, tail)
        assert answer.status_code == 200 and untraced(answer), tail
        types[tail] = answer["Content-Type"]
    assert types["pdf"] == "application/pdf" and types["plot/cpu"] == "image/png"
    assert types["pie"] == "image/png"
    head = Client().head(made.path)  # out of the assert: a failure would show the path
    assert head.status_code == 200
    assert ShareLink.objects.get().last_used_at is not None

    again = make_link(alice)
    assert again.token != made.token and ShareLink.objects.count() == 2


def test_a_visitor_logged_in_or_sending_a_token_gets_what_a_stranger_gets(
        usage_site: UsageSite) -> None:
    measured(usage_site)
    made = make_link(client_of("alice"))
    stranger = get(made).content
    bob = client_of("bob", staff=True)
    _row, token = api_tokens.create(User.objects.get(username="alice"))
    for visitor in (bob, Client(HTTP_AUTHORIZATION=f"Bearer {token}"),
                    Client(HTTP_AUTHORIZATION="MUNGE garbage")):
        assert get(made, client=visitor).content == stranger


def test_the_form_is_the_owners_alone(usage_site: UsageSite,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    measured(usage_site)
    usage_site.job("5000", user="carol")  # carol's own job: a member of alice's account
    load_report("5000")
    monkeypatch.setenv("CLUSTERWATCH_USAGE_ACCOUNT_ACCESS", "1")
    get_config.cache_clear()
    for reader in (client_of("root", staff=True), client_of("carol")):
        page = reader.get("/usage/jobs/4242/")
        assert page.status_code == 200 and b'id="sharing"' not in page.content
        assert reader.post("/usage/jobs/4242/share", {"days": "7"}).status_code == 404
    assert ShareLink.objects.count() == 0


def test_a_wrong_tampered_expired_revoked_or_closed_link_is_one_404(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    measured(usage_site)
    measured(usage_site, "4243", name="the-other-job")
    alice = client_of("alice")
    made, other = make_link(alice, days="1"), make_link(alice, "4243")
    wrong = Client().get("/usage/shared/cws_AAAAAAAA_" + "A" * 43 + "/")
    assert wrong.status_code == 404 and untraced(wrong)
    gone = (wrong.status_code, wrong["Content-Type"], wrong.content)

    def same_404(link: Made, tail: str = "") -> bool:
        answer = get(link, tail)
        return (answer.status_code, answer["Content-Type"], answer.content) == gone

    last = made.secret[-1]
    tampered = [made.prefix + "_" + made.secret[:-1] + ("B" if last != "B" else "C"),
                made.prefix + "_" + other.secret,  # this prefix, the other link's secret
                other.prefix + "_" + made.secret,
                made.token.upper(), made.token + "x", made.token[:-1], "x" * 10_000,
                made.token[:20] + "%00" + made.token[21:], "cwu_" + made.token[4:],
                "%00", made.prefix]
    for number, token in enumerate(tampered):
        for tail in ("", "pdf", "pie", "plot/cpu"):
            assert same_404(Made.of(token), tail), f"tampered token {number}"
    shown = text_of(get(other))
    assert "Job 4243 “the-other-job”" in shown and "4242" not in shown

    # Expiry: a clock moved past the day the link was made for.
    row = ShareLink.objects.get(prefix=made.prefix)
    monkeypatch.setattr(shared_views, "clock", lambda: row.expires_at - timedelta(seconds=1))
    assert get(made).status_code == 200
    monkeypatch.setattr(shared_views, "clock", lambda: row.expires_at)
    assert same_404(made) and same_404(made, "pdf")
    assert share_links.open_link(made.token, row.expires_at) is None
    monkeypatch.setattr(shared_views, "clock", timezone.now)

    # Closed: the maker made inactive; or the job no longer theirs (the account renamed).
    assert get(other).status_code == 200
    User.objects.filter(username="alice").update(is_active=False)
    assert same_404(other)
    User.objects.filter(username="alice").update(is_active=True)
    User.objects.filter(username="alice").update(username="alice.smith")
    assert same_404(other)


def test_the_owner_and_staff_revoke_links(usage_site: UsageSite) -> None:
    measured(usage_site)
    alice = client_of("alice")
    mine, theirs = make_link(alice), make_link(alice)
    gone = Client().get("/usage/shared/x/").content
    row = ShareLink.objects.get(prefix=mine.prefix)

    bob = client_of("bob")
    assert bob.post("/usage/jobs/4242/share", {"revoke": str(row.id)}).status_code == 404
    assert get(mine).status_code == 200

    answer = alice.post("/usage/jobs/4242/share", {"revoke": str(row.id)})
    assert answer.status_code == 303 and answer["Location"] == "/usage/jobs/4242/#sharing"
    assert get(mine).content == gone
    row.refresh_from_db()
    assert row.revoked_by is not None and row.revoked_by.username == "alice"
    page = alice.get("/usage/jobs/4242/")
    assert b"The link is revoked" in page.content and mine.prefix.encode() not in page.content

    root = Client()
    root.force_login(User.objects.create_superuser("root", password=None))
    listing = root.get("/admin/usage/sharelink/", {"q": "4242"})
    assert listing.status_code == 200 and theirs.prefix.encode() in listing.content
    assert not carries(listing.content, theirs) and b"digest" not in listing.content
    other = ShareLink.objects.get(prefix=theirs.prefix)
    done = root.post("/admin/usage/sharelink/", {"action": "revoke_links",
                                                 "_selected_action": [str(other.id)]})
    assert done.status_code == 302
    other.refresh_from_db()
    assert other.revoked_by is not None and other.revoked_by.username == "root"
    assert get(theirs).content == gone


def test_only_get_and_head_open_a_link_and_the_form_wants_a_post_with_csrf(
        usage_site: UsageSite) -> None:
    measured(usage_site)
    made = make_link(client_of("alice"))
    for method in ("post", "put", "delete", "patch"):
        answer = getattr(Client(), method)(made.path)
        assert answer.status_code == 405 and answer["Allow"] == "GET, HEAD", method
        assert untraced(answer)
    checked = Client(enforce_csrf_checks=True)  # as a browser: the form's token or nothing
    checked.force_login(User.objects.get(username="alice"))
    assert checked.post("/usage/jobs/4242/share", {"days": "7"}).status_code == 403
    owner = Client()
    owner.force_login(User.objects.get(username="alice"))
    assert owner.get("/usage/jobs/4242/share").status_code == 405
    for days in ("0", "31", "abc", "\uff17", "7.5", "-1", "100000000000000000000"):
        answer = owner.post("/usage/jobs/4242/share", {"days": days})
        assert answer.status_code == 400 and b"1 to 30 days" in answer.content, days
    assert ShareLink.objects.count() == 1


def test_no_log_record_carries_a_link(usage_site: UsageSite, logged: Records,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    measured(usage_site)
    usage_site.job("4244", running=True)
    alice = client_of("alice")
    ended, running = make_link(alice), make_link(alice, "4244")
    assert get(ended).status_code == 200
    usage_site.fail("sacct: error: Problem talking to the database: Connection refused")
    down = get(running)
    assert down.status_code == 503 and untraced(down)
    usage_site.fail("")

    def broken(*_args: object) -> bytes:
        raise RuntimeError("the renderer broke")

    monkeypatch.setattr(rendered, "report_pdf", broken)  # the views import it as they draw
    failed = get(ended, "pdf")
    assert failed.status_code == 500 and untraced(failed)
    posted = Client().post(ended.path)
    assert posted.status_code == 405
    row = ShareLink.objects.get(prefix=ended.prefix)
    row.revoked_at = timezone.now()
    row.save()
    assert get(ended).status_code == 404
    assert any("a shared report failed" in line for line in logged.lines)
    assert any("the renderer broke" in line for line in logged.lines)  # its traceback
    for made in (ended, running):
        assert not any(carries(line, made) for line in logged.lines), repr(made)
        assert not any(made.path in line for line in logged.lines), repr(made)


def test_the_made_page_shows_the_link_once_and_is_kept_by_no_cache(
        usage_site: UsageSite) -> None:
    measured(usage_site)
    alice = client_of("alice")
    answer = alice.post("/usage/jobs/4242/share", {"days": "30"})
    assert answer.status_code == 200
    assert all(word in answer["Cache-Control"] for word in PRIVATE)
    assert answer["Referrer-Policy"] == "no-referrer"
    text = text_of(answer)
    assert "shown only this once" in text and "(30 days)" in text
    assert b"revoke" in without_csrf(answer.content).lower()


def test_a_path_under_a_link_that_names_no_page_is_the_links_404_and_not_logged(
        usage_site: UsageSite, logged: Records) -> None:
    measured(usage_site)
    made = make_link(client_of("alice"))
    gone = Client().get("/usage/shared/x/")
    for tail in ("plot/", "nope", "pdf/", "plot/cpu/x", "pie/%00"):
        answer = get(made, tail)
        assert (answer.status_code, answer.content) == (404, gone.content), tail
        assert untraced(answer), tail
    for path in (made.path[:-1], made.path + "/"):
        answer = Client().get(path)
        assert (answer.status_code, answer.content) == (404, gone.content)
        assert untraced(answer)
    assert get(made).status_code == 200  # the link itself still opens
    assert not any(carries(line, made) for line in logged.lines)
