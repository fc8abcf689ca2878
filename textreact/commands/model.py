"""The model the flags and the environment name, opened for as long as a command needs it: a
server's OpenAI-compatible endpoint (its URL checked before any request, credentials written
into it sent as basic auth, the environment's proxy applied), or the embedded model, fetched on
first use."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from textreact.commands.terminal import progress
from textreact.errors import ConfigError
from textreact.redact import public_url, split_userinfo

__all__ = ["base_url_of", "checked_base_url", "open_model"]


def base_url_of(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """The server the flags or the environment name; None: the embedded model."""
    return args.base_url or env.get("OPENAI_BASE_URL")


@contextlib.contextmanager
def open_model(args: argparse.Namespace, env: Mapping[str, str]) -> Iterator[Any]:
    """The model the flags and environment ask for; the embedded server lives as long as this."""
    from textreact.models.openai_compat import OpenAICompatModel

    base_url = base_url_of(args, env)
    options = {"max_tokens": args.max_tokens, "timeout": args.timeout, "constrain": args.constrain}
    if base_url and args.gguf:
        raise ConfigError(
            "--gguf runs the embedded server, --base-url (or OPENAI_BASE_URL) names another "
            "server: give one of them"
        )
    if base_url:
        source = "--base-url" if args.base_url else "OPENAI_BASE_URL"
        url, credentials = split_userinfo(checked_base_url(base_url, source))
        name = args.model or env.get("TEXTREACT_MODEL")
        if not name:
            raise ConfigError(
                "a model name is needed with --base-url: pass --model NAME or set "
                "TEXTREACT_MODEL (e.g. --model qwen2.5:3b for Ollama)"
            )
        api_key = args.api_key or env.get("OPENAI_API_KEY")
        client = _http_client(url, credentials, args.timeout, env)
        with OpenAICompatModel(name, url, api_key, http_client=client, **options) as model:
            yield model
        return
    from textreact.models import local

    gguf = args.gguf
    if gguf is None:  # the default model, fetched on first use
        cache = local.default_cache_dir(env)
        gguf = local.gguf_path(cache)
        if not gguf.is_file():
            progress(f"textreact: first run: fetching the default model into {cache}")
            gguf = local.pull(cache, progress=progress)
    with local.local_model(gguf, **options) as model:
        yield model


def checked_base_url(url: str, source: str = "--base-url") -> str:
    """`url` when it can be an OpenAI-compatible endpoint; otherwise a ConfigError, raised before
    any request, that shows the URL with its credentials blanked."""
    shown = repr(public_url(url))
    example = "e.g. http://localhost:11434/v1"
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(
            f"{source} {shown} holds spaces, control characters or bytes that are not UTF-8; "
            f"give the endpoint's URL alone, {example}"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a port out of range or not a number, a broken [IPv6] host
        raise ConfigError(f"{source} {shown} is not a valid URL ({exc}); {example}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(f"{source} {shown} must start with http:// or https://, {example}")
    if not parts.hostname:
        raise ConfigError(f"{source} {shown} names no host; {example}")
    if port == 0:
        raise ConfigError(f"{source} {shown}: port 0 cannot be connected to; {example}")
    return url


def _http_client(
    url: str, credentials: tuple[str, str] | None, timeout: float, env: Mapping[str, str]
) -> Any:
    """The SDK's HTTP client: `timeout` as a deadline for each whole request; credentials that
    were written into the URL sent as basic auth (as httpx sends them), so the URL kept and shown
    holds none; the proxy the environment names (httpx reads none once given a transport)."""
    from textreact.models.deadline import deadline_client, httpx

    auth = httpx.BasicAuth(*credentials) if credentials else None
    return deadline_client(timeout, auth=auth, proxy=_proxy_for(url, env))


def _proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy that `HTTP(S)_PROXY` / `ALL_PROXY` name for `url`, unless `NO_PROXY` covers it."""
    from urllib.request import proxy_bypass_environment

    def variable(name: str) -> str | None:
        return env.get(name) or env.get(name.upper()) or None

    parts = urlsplit(url)
    no_proxy = variable("no_proxy")
    if no_proxy and proxy_bypass_environment(parts.hostname or "", {"no": no_proxy}):
        return None
    return variable(f"{parts.scheme.lower()}_proxy") or variable("all_proxy")
