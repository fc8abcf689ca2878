"""Credentials -> blanks: the one place that decides what of an API key or a URL may be shown in
an error, a repr, a report or a transcript.

Blanking always comes before cutting: a key cut in half by a length limit no longer matches
itself, so text is blanked whole and only then shortened."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = [
    "BLANK",
    "blank_data",
    "blank_text",
    "cut",
    "public_url",
    "split_userinfo",
    "userinfo_secrets",
]

#: What a secret is shown as.
BLANK = "***"

# `scheme://userinfo@`: userinfo runs to the last `@` before the host (RFC 3986), so a password
# holding an `@` is blanked whole.
_USERINFO_AT_START = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/?#]*@")
#: A scheme is at most 32 characters here (real ones are a few): unbounded, the scan for `://`
#: from every word start made `a.a.a...` quadratic, in text such as an echoed error body.
_USERINFO_IN_TEXT = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://)[^\s/?#\"'<>]*@")


#: A URL's query in text: a key there (`?api_key=...`, `?key=...`) is as secret as one written
#: as userinfo, and no name tells every key apart, so every value of a query is blanked.
_QUERY_IN_TEXT = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s?#\"'<>]*)\?(?P<query>[^\s#\"'<>]*)"
)


def _blank_query(match: re.Match[str]) -> str:
    """`?a=1&b` -> `?a=***&***`: the names of a query kept, its values blanked."""
    pairs = match["query"].split("&")
    shown = [f"{name}={BLANK}" if sep else BLANK if name else "" for name, sep, _ in
             (pair.partition("=") for pair in pairs)]  # fmt: skip
    return f"{match['head']}?{'&'.join(shown)}"


def public_url(url: str) -> str:
    """`url` as it may be shown: credentials written into it (`https://user:key@host`) and the
    values of its query (`?api_key=...`) blanked."""
    return _QUERY_IN_TEXT.sub(_blank_query, _USERINFO_AT_START.sub(rf"\g<scheme>{BLANK}@", url))


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its userinfo, and the (user, password) it held (percent-decoded), so the
    credentials can travel as HTTP basic auth while only the bare URL is kept and shown."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    bare = urlunsplit(parts._replace(netloc=host))
    return bare, (unquote(parts.username or ""), unquote(parts.password or ""))


def userinfo_secrets(url: str) -> list[str]:
    """What a URL's `user:password` puts on the wire, to blank wherever it comes back: the
    password (as written and decoded) and the basic-auth token an HTTP client makes of both
    (`Authorization: Basic base64(user:password)`), which a server may echo in an error."""
    _, credentials = split_userinfo(url)
    if credentials is None:
        return []
    user, password = credentials
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    written = urlsplit(url).password
    return [secret for secret in dict.fromkeys((token, password, written)) if secret]


def blank_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret, and the userinfo and query values of any URL in it,
    blanked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, BLANK)
    return _QUERY_IN_TEXT.sub(_blank_query, _USERINFO_IN_TEXT.sub(rf"\g<scheme>{BLANK}@", text))


def blank_data(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """JSON-like data with `blank_text` applied to every string in it, keys included: blanked
    before it is serialised, where escaping could otherwise hide a secret from a text search."""
    hidden = [s for s in secrets if s]
    if isinstance(value, str):
        return blank_text(value, hidden)
    if isinstance(value, Mapping):
        return {blank_data(k, hidden): blank_data(v, hidden) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [blank_data(item, hidden) for item in value]
    return value


def cut(text: str, limit: int) -> str:
    """`text` shortened to about `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"
