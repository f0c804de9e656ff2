"""``python -m jarvis_core.cli`` runs the ``jarvis`` command."""

import sys

from jarvis_core.cli.main import main

sys.exit(main())
