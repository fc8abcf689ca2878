"""CI: the embedded model's llama.cpp server, as an upstream for the other installs' checks.

Writes the base URL to the file named by the first argument, then serves until killed."""

import os
import sys
import time
from pathlib import Path

from textreact.models import local

with local.local_server(local.gguf_path(local.default_cache_dir(os.environ))) as url:
    Path(sys.argv[1]).write_text(url)
    while True:
        time.sleep(60)
