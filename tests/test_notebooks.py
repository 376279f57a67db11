"""Every notebook under notebooks/ runs end to end."""
from pathlib import Path

import pytest

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # a cell that ends on a figure shows it (an image, not "<Figure size ...>")
    for c in nb.cells:
        if c.cell_type == "code" and c.source.strip().splitlines()[-1].startswith("fig "):
            assert any("image/png" in o.get("data", {}) for o in c.get("outputs", [])), c.source
