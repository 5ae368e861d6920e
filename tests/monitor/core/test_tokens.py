"""The token primitives shared by host tokens and API tokens (clusterwatch.monitor.core.tokens)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from clusterwatch.monitor.core import tokens


@pytest.mark.parametrize("scheme", ["cwh_", "cwu_"])
def test_it_makes_random_tokens_whose_prefix_is_group_one(scheme: str) -> None:
    pattern = tokens.token_pattern(scheme)
    made = [tokens.generate(scheme) for _ in range(20)]
    assert len({token for token, _ in made}) == 20
    for token, prefix in made:
        match = pattern.fullmatch(token)
        assert match is not None and match.group(1) == prefix == token[:12]
        assert len(token) == 4 + 8 + 1 + 43


def test_a_scheme_never_matches_the_other_schemes_tokens() -> None:
    host, _ = tokens.generate("cwh_")
    assert tokens.token_pattern("cwu_").fullmatch(host) is None


def test_it_matches_only_the_digest_of_the_token_itself() -> None:
    token, _ = tokens.generate("cwu_")
    other, _ = tokens.generate("cwu_")
    assert tokens.matches(tokens.digest(token), token)
    assert not tokens.matches(tokens.digest(other), token)
    # No row with the prefix: compared all the same, and never a match.
    assert not tokens.matches(None, token)


@pytest.mark.parametrize(("value", "found"), [
    ("Bearer {t}", True), ("bearer   {t}", True), ("  BEARER {t} ", True),
    ("Token {t}", False), ("Bearer {t}x", False), ("Bearer", False), ("{t}", False), ("", False),
])
def test_it_reads_a_credential_of_an_allowed_scheme(value: str, found: bool) -> None:
    token, _ = tokens.generate("cwu_")
    credential = tokens.credential_of(value.format(t=token), ("bearer",),
                                      tokens.token_pattern("cwu_"))
    assert credential == (token if found else None)
    assert tokens.credential_of(None, ("bearer",), tokens.token_pattern("cwu_")) is None


@pytest.mark.django_db
def test_it_issues_again_under_another_prefix_when_one_is_taken() -> None:
    tried: list[str] = []

    def store(prefix: str, digest: str) -> tuple[str, str]:
        tried.append(prefix)
        if len(tried) < 3:
            raise IntegrityError("prefix taken")
        return prefix, digest

    (prefix, digest), token = tokens.issue("cwu_", store)
    assert len(set(tried)) == 3 and prefix == tried[-1] == token[:12]
    assert digest == tokens.digest(token) and token not in digest


@pytest.mark.django_db
def test_it_gives_up_after_a_few_taken_prefixes() -> None:
    def store(_prefix: str, _digest: str) -> None:
        raise IntegrityError("prefix taken")

    with pytest.raises(RuntimeError, match="free token prefix") as raised:
        tokens.issue("cwh_", store)
    assert "cwh_" not in str(raised.value)
