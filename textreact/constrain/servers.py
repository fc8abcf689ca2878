"""Which server is behind a base URL, whether it takes a grammar, and the request fields that
carry one to it.

Told once per endpoint from what the servers say of themselves, cheapest first:
- llama.cpp: `GET /props` (at the root, not under /v1) answers with `default_generation_settings`
  and `total_slots`; `/v1/models` says `owned_by: "llamacpp"`. It takes `grammar` (GBNF) in
  the body, refuses it together with `tools=` (400 "Cannot use custom grammar constraints with
  tools"), refuses a malformed grammar with 400, and ends the reply once the grammar is complete.
- vLLM: `/v1/models` says `owned_by: "vllm"`; `GET /version` gives the version, which decides
  between `structured_outputs: {"grammar": …}` (0.10.2 on) and `guided_grammar` (before it;
  removed in 0.12).
- SGLang: `/v1/models` says `owned_by: "sglang"`; it takes `ebnf`, unless its grammar backend is
  off (`grammar_backend: "none"` in `GET /get_server_info` or `/server_info`).
Anything else (OpenAI, Ollama, a proxy that hides the server) is unknown: None, and the caller
runs unconstrained with a note. Nothing here raises for what a server answers or fails to.
An optional probe (one request of two tokens with a tiny grammar) tells a llama.cpp-compatible
server that hides its `/props`.

Lazy grammars (free text until a trigger, the grammar after it) cannot be sent to llama.cpp's
chat endpoint: it sets `grammar_lazy` and `grammar_triggers` from its own template's tool
handling and drops a client's (tools/server/server-common.cpp, `oaicompat_chat_params_parse`;
measured on xllamacpp 2026.10: a grammar sent with `grammar_lazy: true` bound the reply from
its first token). `textreact.constrain.calls` writes the grammar that stands in for one.
`chat_template` reads the template a llama.cpp server applies (`chat_template` in `/props`),
from which `textreact.protocols.families` tells the model's own tool format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from textreact.errors import ConfigError

if TYPE_CHECKING:
    import httpx2 as httpx

#: The kinds of server that take a grammar, as `ServerInfo.kind` names them.
SERVER_KINDS: Final = ("llama.cpp", "vllm", "sglang")
#: The first vLLM release that reads `structured_outputs`.
_VLLM_STRUCTURED_OUTPUTS: Final = (0, 10, 2)
_OWNERS: Final = {
    "llamacpp": "llama.cpp",
    "llama.cpp": "llama.cpp",
    "vllm": "vllm",
    "sglang": "sglang",
}
_PROBE_GRAMMAR: Final = 'root ::= "yes"'


@dataclass(frozen=True)
class ServerInfo:
    """What one endpoint is and takes, as `detect_server` found it."""

    #: "llama.cpp", "vllm" or "sglang".
    kind: str
    #: Whether it takes a grammar (False: it is known, but its constraining is off).
    grammar: bool
    #: The server's version where it tells one (vLLM's decides the field name).
    version: str | None = None
    #: How it was told, for notes and transcripts: "GET /props", "owned_by vllm", "probe".
    evidence: str = ""

    def request_fields(self, grammar_text: str) -> dict[str, Any]:
        """The extra body fields that carry `grammar_text` to this server."""
        return request_fields(grammar_text, self.kind, version=self.version)


def request_fields(
    grammar_text: str, server_kind: str, *, version: str | None = None
) -> dict[str, Any]:
    """The extra body fields (OpenAI SDK `extra_body`) that carry a GBNF grammar to a server of
    `server_kind`: llama.cpp `grammar`, vLLM `structured_outputs.grammar` (`guided_grammar`
    before 0.10.2, when `version` says so), SGLang `ebnf`."""
    if not isinstance(grammar_text, str) or not grammar_text.strip():
        raise ConfigError("request_fields needs the grammar's text, e.g. from tools_grammar()")
    if server_kind == "llama.cpp":
        return {"grammar": grammar_text}
    if server_kind == "vllm":
        if version is not None and _version(version) < _VLLM_STRUCTURED_OUTPUTS:
            return {"guided_grammar": grammar_text}
        return {"structured_outputs": {"grammar": grammar_text}}
    if server_kind == "sglang":
        return {"ebnf": grammar_text}
    raise ConfigError(
        f"server_kind must be one of {', '.join(SERVER_KINDS)}, not {server_kind!r}; "
        "for another server, run without a grammar"
    )


def _version(text: str) -> tuple[int, ...]:
    """`0.10.2rc1.dev3` -> (0, 10, 2); what cannot be read is taken as new."""
    parts = re.findall(r"\d+", text.split("+")[0])[:3]
    return tuple(int(p) for p in parts) if parts else (999,)


def detect_server(
    base_url: str,
    *,
    api_key: str | None = None,
    http_client: httpx.Client | None = None,
    timeout: float = 5.0,
    probe_model: str | None = None,
) -> ServerInfo | None:
    """What the server at `base_url` (with or without /v1) is and whether it takes a grammar;
    None when it cannot tell. With `probe_model`, a server that names itself nowhere is sent
    one tiny grammar-constrained request for that model: one that answers as the grammar says
    takes llama.cpp's `grammar` field. Never raises for anything the server does."""
    import httpx2 as httpx  # the OpenAI SDK's own HTTP library, loaded only when detecting

    api = base_url.rstrip("/")
    root = api.removesuffix("/v1")
    api = root + "/v1"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    client = http_client or httpx.Client(timeout=timeout)
    try:
        return _detect(client, root, api, headers, timeout, probe_model)
    except Exception:  # a detector that crashed a run would defeat its purpose
        return None
    finally:
        if http_client is None:
            client.close()


def _detect(
    client: httpx.Client,
    root: str,
    api: str,
    headers: dict[str, str],
    timeout: float,
    probe_model: str | None,
) -> ServerInfo | None:
    props = _get_json(client, root + "/props", headers, timeout)
    if isinstance(props, dict) and "default_generation_settings" in props:
        build = props.get("build_info")
        return ServerInfo(
            "llama.cpp", True, build if isinstance(build, str) else None, "GET /props"
        )
    models = _get_json(client, api + "/models", headers, timeout)
    owner = _owner(models)
    if owner == "llama.cpp":
        return ServerInfo("llama.cpp", True, None, "owned_by llamacpp")
    if owner == "vllm":
        found = _get_json(client, root + "/version", headers, timeout)
        version = found.get("version") if isinstance(found, dict) else None
        return ServerInfo(
            "vllm", True, version if isinstance(version, str) else None, "owned_by vllm"
        )
    if owner == "sglang":
        info = _get_json(client, root + "/get_server_info", headers, timeout)
        if not isinstance(info, dict):
            info = _get_json(client, root + "/server_info", headers, timeout)
        info = info if isinstance(info, dict) else {}
        version = info.get("version") if isinstance(info.get("version"), str) else None
        grammar = str(info.get("grammar_backend", "")).lower() != "none"
        return ServerInfo("sglang", grammar, version, "owned_by sglang")
    if probe_model:
        return _probe(client, api, headers, timeout, probe_model)
    return None


def chat_template(
    base_url: str,
    *,
    api_key: str | None = None,
    http_client: httpx.Client | None = None,
    timeout: float = 5.0,
) -> str | None:
    """The chat template the server at `base_url` (with or without /v1) applies, where it says
    (llama.cpp: `chat_template` in `GET /props`); None where it does not. Never raises for
    anything the server does."""
    import httpx2 as httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    client = http_client or httpx.Client(timeout=timeout)
    try:
        props = _get_json(client, root + "/props", headers, timeout)
    finally:
        if http_client is None:
            client.close()
    template = props.get("chat_template") if isinstance(props, dict) else None
    return template if isinstance(template, str) and template.strip() else None


def _get_json(client: httpx.Client, url: str, headers: dict[str, str], timeout: float) -> Any:
    try:
        reply = client.get(url, headers=headers, timeout=timeout)
        return reply.json() if reply.status_code == 200 else None
    except Exception:  # unreachable, refused, not JSON: this source tells nothing
        return None


def _owner(models: Any) -> str | None:
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list):
        return None
    owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
    kinds = {_OWNERS[o] for o in owners if o in _OWNERS}
    return kinds.pop() if len(kinds) == 1 else None


def _probe(
    client: httpx.Client, api: str, headers: dict[str, str], timeout: float, model: str
) -> ServerInfo | None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say no."}],
        "max_tokens": 2,
        "temperature": 0,
        "grammar": _PROBE_GRAMMAR,
    }
    try:
        # a generation, prompt included, takes longer than a GET on a busy server
        wait = max(timeout, 30.0)
        reply = client.post(api + "/chat/completions", json=body, headers=headers, timeout=wait)
        content = (
            reply.json()["choices"][0]["message"]["content"] if reply.status_code == 200 else None
        )
    except Exception:  # a failed probe only means "unknown"
        return None
    if isinstance(content, str) and content.strip() == "yes":
        return ServerInfo("llama.cpp", True, None, "probe")
    return None
