"""Every notebook runs end to end on the smoke profile (tiny models) and records its metrics."""
import json
import math

import papermill as pm
import pytest
import yaml

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_smoke(nb, tmp_path):
    params = yaml.safe_load((ROOT / "notebooks/profiles/smoke.yaml").read_text())
    params.update(results_dir=str(tmp_path / "results"), figures_dir=str(tmp_path / "figures"), update_readme=False)
    out = tmp_path / nb.name
    pm.execute_notebook(str(nb), str(out), parameters=params, cwd=str(ROOT / "notebooks"), kernel_name="python3",
                        progress_bar=False)
    executed = json.loads(out.read_text())
    last = executed["cells"][-1]["outputs"]
    text = "".join("".join(o.get("text", "")) for o in last if o.get("name") == "stdout")
    metrics = json.loads(text.strip().splitlines()[-1])
    assert all(math.isfinite(v) and v > 1 for v in metrics["dense_ppl"].values())
    assert set(metrics["dense_ppl"]) == set(params["models"])
    figs = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"table1_ppl.md", "table1_ppl.csv", "claims.md", "efficiency.md", "mpg_scores_heatmap.png"} <= figs
    table1 = (tmp_path / "figures" / "table1_ppl.md").read_text()
    assert "Profile `smoke`" in table1 and "**" in table1
