"""Models: the same text protocol over Anthropic's Messages API (extra `anthropic`).

The Messages API differs from chat completions in three ways this module absorbs: the system
prompt is a separate `system=` field, user and assistant turns must alternate (so consecutive
same-role messages are merged), and stop sequences are `stop_sequences`. Faults map to the same
ModelErrors as the OpenAI-compatible client. The SDK is imported only when a model is built."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from textreact.errors import MissingExtraError, ModelError
from textreact.models.faults import shown
from textreact.models.sdk import AsyncSdkClient, SdkClient, usage_of
from textreact.steps import Completion, ToolCall, Usage

if TYPE_CHECKING:
    from textreact.models.chat import Message

__all__ = ["AnthropicModel", "AsyncAnthropicModel", "to_anthropic"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
INSTALL_HINT = "pip install 'textreact[anthropic]'"

#: Anthropic's stop reasons in the chat-completions vocabulary the loop reads.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


class AnthropicModel(SdkClient):
    """A Claude model (or any server speaking the Messages API), for the text protocol and,
    with `tools=` in Anthropic's format, native `tool_use`.

    `api_key=None` sends a placeholder, so the SDK never falls back to ANTHROPIC_API_KEY on its
    own: the CLI reads the environment and passes the key in."""

    tool_dialect = "anthropic"
    _SDK_CLIENT = "Anthropic"
    _DEFAULT_BASE_URL = ANTHROPIC_BASE_URL
    _KEY_VARIABLE = "ANTHROPIC_API_KEY"

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
                f"{type(self).__name__} needs the anthropic SDK, which is not installed "
                f"({exc}): {INSTALL_HINT}"
            ) from exc
        super().__init__(
            anthropic, model, base_url, api_key, max_tokens, timeout, max_retries, http_client
        )
        self.temperature = temperature

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> Completion:
        """One reply: text blocks joined, `tool_use` blocks as tool calls; raises ModelError
        when none can be had."""
        import anthropic

        request = self.request(messages, stop, tools, tool_choice)
        try:
            response = self._client.messages.create(**request)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self._fault(anthropic, exc) from exc
        return self.completion(response)

    def request(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        """The SDK's keyword arguments for one request."""
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
            if tool_choice is not None and tool_choice != "auto":
                request["tool_choice"] = _anthropic_choice(tool_choice)
        if self.temperature is not None:
            # extra_body: newer SDKs dropped the typed parameter, the API still takes it
            request["extra_body"] = {"temperature": self.temperature}
        return request

    def completion(self, response: Any) -> Completion:
        """The SDK's Message as a Completion, its shape checked block by block."""
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise self._malformed("a reply that is not a Messages API message", response)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            kind = getattr(block, "type", None)
            if kind == "text" and isinstance(getattr(block, "text", None), str):
                texts.append(block.text)
            elif kind == "tool_use" and isinstance(getattr(block, "name", None), str):
                arguments = json.dumps(getattr(block, "input", None) or {}, ensure_ascii=False)
                calls.append(
                    ToolCall(
                        str(getattr(block, "id", "") or f"call_{len(calls)}"), block.name, arguments
                    )
                )
            elif kind not in ("thinking", "redacted_thinking"):
                raise self._malformed("a content block that is not text or tool_use", block)
        usage = _usage(getattr(response, "usage", None))
        reason = getattr(response, "stop_reason", None) or "end_turn"
        if not isinstance(reason, str):
            raise self._malformed("a stop reason that is not text", reason)
        return Completion("".join(texts), _FINISH_REASONS.get(reason, reason), usage, tuple(calls))

    def _malformed(self, what: str, value: Any) -> ModelError:
        return ModelError(
            f"the server at {self.shown_url} sent {what} ({shown(value)}) for model "
            f"{self.model!r}; check the base URL (no /v1 at the end)"
        )


class AsyncAnthropicModel(AsyncSdkClient, AnthropicModel):
    """`AnthropicModel` on the SDK's `AsyncAnthropic`; `complete` is a coroutine."""

    _SDK_CLIENT = "AsyncAnthropic"

    async def complete(  # type: ignore[override]
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> Completion:
        """One reply, as `AnthropicModel.complete`, without blocking the event loop."""
        import anthropic

        request = self.request(messages, stop, tools, tool_choice)
        try:
            response = await self._client.messages.create(**request)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise self._fault(anthropic, exc) from exc
        return self.completion(response)


def _anthropic_choice(choice: str) -> dict[str, str]:
    """OpenAI's tool choice in Anthropic's words: "required" is "any", a name is "tool"."""
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _usage(reported: Any) -> Usage:
    """Anthropic's input/output token counts, read as `usage_of` reads OpenAI's."""
    return usage_of(
        {
            "prompt_tokens": getattr(reported, "input_tokens", None),
            "completion_tokens": getattr(reported, "output_tokens", None),
        }
    )


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
