"""Table 4's model gets its <bos>: notebook 2's Gemma-3-270m cells (the paper's Mistral setting) feed
lm-eval requests that start with Gemma's BOS, through the same experiment path as the records
(``PruneExperiment.zeroshot``), and their keys say so ("windows": "bos+text")."""
import pytest

from repro.engines.base import Setup
from repro.engines.prune import PruneExperiment
from repro.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma():
    """The converted model from the user's cache (read only, loaded here before the per-test cache
    isolation of conftest applies; converting the GGUF again would take minutes): skipped without it."""
    from repro.assets.files import cache_dir

    if not (cache_dir("models") / "gemma3-270m").is_dir():
        pytest.skip("gemma3-270m not converted in the model cache (make setup)")
    setup = Setup(data="wiki-sample", seqlen=32, max_windows=2, calib_data="wiki-sample", calib_nsamples=2,
                  calib_seqlen=32, eval_dtype="float32")
    e = PruneExperiment("gemma3-270m", setup, Store(None), progress=False)
    e.loaded  # noqa: B018  (loads now, from the cache above)
    return e


def test_gemma_zeroshot_requests_start_with_its_bos(gemma):
    bos = gemma.loaded.tokenizer.bos_token_id
    assert bos is not None and gemma.bos == bos
    assert gemma.base_config()["windows"] == "bos+text"  # in the key of every Gemma prune-ppl cell (Table 4's rows)
    model = gemma.eval_model()
    seen = []
    hook = model.get_input_embeddings().register_forward_pre_hook(lambda m, a: seen.extend(a[0][:, 0].tolist()))
    try:
        out = gemma.zeroshot(model, ["hellaswag"], 1)
    finally:
        hook.remove()
    assert out["tasks"]["hellaswag"]["n"] == 1
    assert seen and set(seen) == {bos}  # every request of the document's four endings
