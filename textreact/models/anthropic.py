"""Models: the same text protocol over Anthropic's Messages API (extra `anthropic`).

The Messages API differs from chat completions in three ways this module absorbs: the system
prompt is a separate `system=` field, user and assistant turns must alternate (so consecutive
same-role messages are merged), and stop sequences are `stop_sequences`. Faults map to the same
ModelErrors as the OpenAI-compatible client. The SDK is imported only when a model is built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from textreact.errors import MissingExtraError, ModelError
from textreact.models import check_client_settings
from textreact.models.openai_compat import PLACEHOLDER_API_KEY, sdk_fault
from textreact.steps import Completion, Usage

if TYPE_CHECKING:
    from anthropic.types import Message as AnthropicMessage

    from textreact.models import Message

__all__ = ["AnthropicModel", "to_anthropic"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
INSTALL_HINT = "pip install 'textreact[anthropic]'"

#: Anthropic's stop reasons in the chat-completions vocabulary the loop reads.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


class AnthropicModel:
    """A Claude model (or any server speaking the Messages API) for the text protocol.

    `api_key=None` sends a placeholder, so the SDK never falls back to ANTHROPIC_API_KEY on its
    own: the CLI reads the environment and passes the key in."""

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        *,
        max_tokens: int = 1024,
        temperature: float | None = 0.0,
        timeout: float = 120.0,
        max_retries: int = 2,
        http_client: Any = None,
        base_url: str | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError(
                f"AnthropicModel needs the anthropic SDK, which is not installed ({exc}): "
                f"{INSTALL_HINT}"
            ) from exc
        check_client_settings(
            model, timeout=timeout, max_retries=max_retries, max_tokens=max_tokens
        )
        self.model = model
        self.base_url = (base_url or ANTHROPIC_BASE_URL).rstrip("/")
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key
        self._client = anthropic.Anthropic(
            api_key=api_key or PLACEHOLDER_API_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], *, stop: Sequence[str] = ()) -> Completion:
        """One completion of the text protocol; raises ModelError when none can be had."""
        response = self.create(messages, stop=stop)
        text = "".join(block.text for block in response.content if block.type == "text")
        usage = Usage(
            int(getattr(response.usage, "input_tokens", 0) or 0),
            int(getattr(response.usage, "output_tokens", 0) or 0),
        )
        reason = response.stop_reason or "end_turn"
        return Completion(text, _FINISH_REASONS.get(reason, reason), usage)

    def create(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stop: Sequence[str] = (),
    ) -> AnthropicMessage:
        """The SDK's Message, for a native tool_use loop; `tools` in Anthropic's format."""
        import anthropic

        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": turns,
        }
        if system:
            request["system"] = system
        if stop:
            request["stop_sequences"] = list(stop)
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if self.temperature is not None:
            # extra_body: newer SDKs dropped the typed parameter, the API still takes it
            request["extra_body"] = {"temperature": self.temperature}
        try:
            response = self._client.messages.create(**request)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise sdk_fault(
                anthropic,
                exc,
                url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                api_key=self._api_key,
                key_variable="ANTHROPIC_API_KEY",
            ) from exc
        if not isinstance(getattr(response, "content", None), list):
            raise ModelError(
                f"the server at {self.base_url} sent a reply that is not a Messages API message "
                f"({str(response)[:80]!r}); check the base URL (no /v1 at the end)"
            )
        return response

    def close(self) -> None:
        """Close the SDK's connection pool."""
        self._client.close()

    def __enter__(self) -> AnthropicModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Split out the system prompt and merge consecutive same-role turns, which the Messages
    API rejects. Text contents join with a blank line; content-block lists concatenate."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            system.append(content)
        elif turns and turns[-1]["role"] == role:
            turns[-1]["content"] = _join(turns[-1]["content"], content)
        else:
            turns.append({"role": role, "content": content})
    return "\n\n".join(system), turns


def _join(first: str | list[Any], second: str | list[Any]) -> str | list[Any]:
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _blocks(first) + _blocks(second)


def _blocks(content: str | list[Any]) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
