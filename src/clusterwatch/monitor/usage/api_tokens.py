"""The API tokens under the name `create_usage_token` and older scripts import them by: they
are the kernel's (`clusterwatch.monitor.core.api_tokens`), shared with the image-demand API."""

from __future__ import annotations

from clusterwatch.monitor.core.api_tokens import SCHEME, TOKEN_RE, authenticate, create, from_header

__all__ = ["SCHEME", "TOKEN_RE", "authenticate", "create", "from_header"]
