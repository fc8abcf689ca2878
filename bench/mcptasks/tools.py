"""The MCP suite's tools: two reference MCP servers nobody here wrote, `mcp-server-time` (its
local zone pinned to UTC) and `mcp-server-git`, over a small repository made afresh at import
with fixed authors and dates, so every run sees the same history. `TOOLS` is what
`textreact compare --tools bench/mcptasks/tools.py:TOOLS` and `bench/matrix_bench.py --tools`
take (the reading tools only, and `read_more`); the connection closes when the process ends.

Needs the `mcp` extra and the two servers: `pip install 'textreact[mcp]' mcp-server-time
mcp-server-git`."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
from pathlib import Path

from textreact.mcp import ServerSpec, connect

#: Where the repository is made; the tasks name this path.
REPO = Path("/tmp/textreact-mcp-bench/shop")

#: (file, content, commit message), committed in this order on 2026-01-0N.
HISTORY = (
    ("README.md", "# shop\nA small web shop.\n", "Start the shop"),
    ("prices.csv", "sku,price\nSKU-1,9.50\nSKU-2,12.00\n", "Add the price list"),
    ("prices.csv", "sku,price\nSKU-1,9.50\nSKU-2,11.00\nSKU-3,4.25\n", "Lower SKU-2, add SKU-3"),
    ("checkout.py", "def total(prices):\n    return sum(prices)\n", "Add the checkout total"),
    ("README.md", "# shop\nA small web shop.\nRun: python checkout.py\n", "Say how to run it"),
)


def _git(*words: str, day: int = 1) -> None:
    stamp = f"2026-01-{day:02d}T10:00:00+00:00"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    who = ("-c", "user.name=Mei Lin", "-c", "user.email=mei@example.com")
    subprocess.run(["git", *who, "-C", str(REPO), *words], check=True, env=env, capture_output=True)


def make_repo() -> None:
    """The repository, made afresh: five commits on `main`, a branch `discounts` with one more,
    and one change to `checkout.py` left unstaged."""
    shutil.rmtree(REPO, ignore_errors=True)
    REPO.mkdir(parents=True)
    _git("init", "-q", "-b", "main")
    for day, (name, content, message) in enumerate(HISTORY, 1):
        (REPO / name).write_text(content)
        _git("add", name, day=day)
        _git("commit", "-qm", message, day=day)
    _git("checkout", "-q", "-b", "discounts")
    (REPO / "discounts.py").write_text("RATE = 0.1\n")
    _git("add", "discounts.py", day=6)
    _git("commit", "-qm", "Add a 10% discount rate", day=6)
    _git("checkout", "-q", "main")
    (REPO / "checkout.py").write_text("def total(prices):\n    return round(sum(prices), 2)\n")


make_repo()
_SERVERS = [
    ServerSpec(name="time", command=sys.executable,
               args=("-m", "mcp_server_time", "--local-timezone", "UTC")),
    ServerSpec(name="git", command=sys.executable,
               args=("-m", "mcp_server_git", "--repository", str(REPO))),
]  # fmt: skip
#: The tools that only read: a call that commits, stages, resets or checks out would change the
#: repository under the tasks that follow it.
READING = ("get_current_time", "convert_time", "git_status", "git_diff*", "git_log", "git_show",
           "git_branch")  # fmt: skip
#: The open connection (closed when the process ends, or by whoever closes it first).
CONNECTION = connect(_SERVERS, allow=READING)
atexit.register(CONNECTION.close)
TOOLS = list(CONNECTION.tools)
