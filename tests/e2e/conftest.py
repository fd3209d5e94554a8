import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def brisk_bin():
    path = pathlib.Path(os.environ.get("BRISK_BIN", REPO / "build" / "brisk"))
    if not path.exists():
        pytest.fail(f"{path} not built (cmake --build build)")
    return str(path)


@pytest.fixture(scope="session")
def default_model():
    path = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.fail("default model missing: run scripts/install_models.sh")
    return str(path)
