"""The MCP tests' store (`mcp_store.build`), built once per module."""

from __future__ import annotations

import pytest
from mcp_store import Recorded, build


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return build(tmp_path_factory.mktemp("mcp"))
