"""The schema of ``[engine.acme]``: its field names are AcmeEngine's constructor arguments."""

from typing import Optional

import attrs


@attrs.frozen
class AcmeConfig:
    host: Optional[str] = None
    api_key: Optional[str] = None
    timeout: float = 120.0
