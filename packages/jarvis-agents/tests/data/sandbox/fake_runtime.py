"""A stand-in for ``docker``/``podman`` in the sandbox tests (installed on PATH under either name).

Every call appends its argv as one JSON line to ``$FAKE_RUNTIME_LOG``. ``run`` then behaves as
``$FAKE_RUNTIME_MODE`` says: ``entrypoint`` (default) executes the real image entry point on the same
stdin, so the job protocol runs end to end; ``no-daemon`` fails like a runtime without its daemon;
``garbage`` answers something that is not a job result; ``hang`` never answers. Other commands
(``kill``, ``build``) only record.
"""

import json
import os
import sys
import time

with open(os.environ["FAKE_RUNTIME_LOG"], "a") as log:
    log.write(json.dumps(sys.argv) + "\n")
mode = os.environ.get("FAKE_RUNTIME_MODE", "entrypoint")
if sys.argv[1] != "run":
    sys.exit(0)
if mode == "entrypoint":
    os.execv(sys.executable, [sys.executable, "-I", os.environ["FAKE_RUNTIME_ENTRYPOINT"]])
if mode == "no-daemon":
    sys.stderr.write("Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n")
    sys.exit(125)
if mode == "garbage":
    print("hello from some other image")
    sys.exit(0)
if mode == "hang":
    time.sleep(60)
