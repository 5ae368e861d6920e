"""What each answer to a posted record means: typed verdicts, one per status."""

from __future__ import annotations

from clusterwatch.reporter.answer_policy import Verdict, classify, set_aside_reason


def test_it_classifies_statuses() -> None:
    assert [classify(s) for s in (200, 201, 204, 299)] == [Verdict.DELIVERED] * 4
    assert [classify(s) for s in (400, 409, 410, 413, 415, 422)] == [Verdict.REJECTED] * 6
    assert [classify(s) for s in (None, 301, 302, 401, 403, 404, 405, 407, 408, 429, 500,
                                   503, 599)] == [Verdict.RETRY] * 13


def test_it_names_each_verdict_with_the_word_the_logs_use() -> None:
    assert [verdict.value for verdict in Verdict] == ["delivered", "rejected", "retry"]


def test_it_names_the_reason_a_rejected_record_is_counted_under() -> None:
    assert set_aside_reason(413) == "set aside: HTTP 413"
