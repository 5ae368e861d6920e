"""Reading a body of unannounced length (chunked): to its end within the limit, never more
than the limit + 1 bytes, and only from a server that ends the stream with the body."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.test import RequestFactory

from clusterwatch.monitor.ingest.body import read_body
from clusterwatch.monitor.ingest.errors import Rejection


class _Stream(io.BytesIO):
    """A server's input stream that records how much was asked of it."""

    def __init__(self, data: bytes, error: Any = None) -> None:
        super().__init__(data)
        self.error = error
        self.consumed = 0

    def read(self, size: Any = -1) -> bytes:
        if self.error is not None:
            raise self.error
        part = super().read(size)
        self.consumed += len(part)
        return part


def _chunked(stream: _Stream, terminated: bool = True) -> Any:
    request = RequestFactory().post("/api/host-reports/h01/", b"",
                                    content_type="application/json",
                                    HTTP_TRANSFER_ENCODING="chunked")
    request.META.pop("CONTENT_LENGTH", None)
    request.META["wsgi.input"] = stream
    if terminated:
        request.META["wsgi.input_terminated"] = True
    return request


def test_it_reads_a_chunked_body_up_to_the_limit_exactly() -> None:
    assert read_body(_chunked(_Stream(b"x" * 200_000)), 200_000) == b"x" * 200_000


def test_it_stops_one_byte_past_the_limit_with_413() -> None:
    stream = _Stream(b"x" * 500_000)
    with pytest.raises(Rejection) as raised:
        read_body(_chunked(stream), 100_000)
    assert raised.value.status == 413 and stream.consumed == 100_001


@pytest.mark.parametrize("error", [OSError("reset"), ValueError("Invalid chunk size")])
def test_it_answers_400_when_the_stream_breaks(error: Exception) -> None:
    with pytest.raises(Rejection) as raised:
        read_body(_chunked(_Stream(b"", error)), 1000)
    assert raised.value.status == 400


def test_it_asks_for_a_length_where_the_stream_would_not_end_with_the_body() -> None:
    stream = _Stream(b'{"a": 1}')
    with pytest.raises(Rejection) as raised:
        read_body(_chunked(stream, terminated=False), 1000)
    assert raised.value.status == 411 and stream.consumed == 0
