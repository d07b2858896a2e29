"""The inference copy of the model (core/packing.py): oneDNN-prepacked linear layers, GELU fused.

Each packed product is a float32 dot product summed in oneDNN's order: Higham's bound for sums in any order holds it
to the exact product (computed here in float64), on every CPU. The copies of every family keep transformers' modules
otherwise, so the forward pass is transformers' own with those products: pipelines are tested against a float64 twin
(never packed) in tests/contextual/test_contextual.py, and the packed float32 pass here against transformers' own
float32 pass. The public fallback (`prepack=False`, or where `onednn_products` finds no oneDNN) is forced here too, on
every family, against transformers in float32 and, through a float64 twin, within float64's rounding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from bounds import EPS32, dot_bound, float64_twin, float64_wobble, gamma
from tiny import FAMILIES

from bertlens.core.packing import (
    FusedProjections,
    PackedLinear,
    ProjectionPart,
    Ragged,
    SelfAttention,
    can_pack,
    inference_model,
    onednn_products,
    packed_copy,
    product_rows,
)

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="packing needs oneDNN")

GELU_SLOPE = 1.13  # the largest |d gelu / dx| (at x ~ 1.5): an error in the product moves GELU by at most this much


def product(linear: torch.nn.Linear, x: torch.Tensor) -> np.ndarray:
    """x W^T + b exactly enough (float64): (rows, out)."""
    w, b = linear.weight.detach().double().numpy(), linear.bias.detach().double().numpy()
    return x.double().numpy() @ w.T + b


def bound(linear: torch.nn.Linear, x: torch.Tensor) -> np.ndarray:
    """Any-order float32 sums of K products and the bias: gamma_(K+1) of the magnitudes, and the result's rounding."""
    w, b = linear.weight.detach().numpy(), linear.bias.detach().numpy()
    magnitudes = dot_bound(x.numpy(), w.T) / gamma(w.shape[1]) + np.abs(b)  # |x| @ |W^T| + |b|
    return gamma(w.shape[1] + 1) * magnitudes + EPS32 * np.abs(product(linear, x))


@pytest.mark.parametrize("shape", [(384, 384), (384, 1536), (1536, 384), (7, 5)])
def test_packed_product_is_the_product(shape):
    torch.manual_seed(0)
    linear = torch.nn.Linear(*shape).eval()
    x = torch.randn(37, 3, shape[0])  # any leading shape: (37, 3, in)
    with torch.inference_mode():
        ours = PackedLinear(linear)(x)
    assert ours.shape == (37, 3, shape[1]) and ours.dtype == torch.float32
    rows = x.reshape(-1, shape[0])
    error = np.abs(ours.reshape(-1, shape[1]).double().numpy() - product(linear, rows))
    assert (error <= bound(linear, rows)).all()


def test_fused_gelu_is_gelu_of_the_product():
    torch.manual_seed(1)
    linear = torch.nn.Linear(384, 1536).eval()
    x = torch.randn(64, 384)
    with torch.inference_mode():
        ours = PackedLinear(linear, "gelu")(x).double().numpy()
    exact = torch.nn.functional.gelu(torch.from_numpy(product(linear, x))).numpy()  # float64 GELU
    # The product's error through GELU's slope, then GELU's own float32 evaluation: a few roundings of its result
    # and of its input's scale (erf's polynomial; 8 units of EPS32 of max(|x|, |y|) cover any implementation).
    allowed = GELU_SLOPE * bound(linear, x) + 8 * EPS32 * np.maximum(np.abs(exact), np.abs(product(linear, x)))
    assert (np.abs(ours - exact) <= allowed).all()


def test_bfloat16_product_sums_in_float32():
    if not onednn_products(torch.bfloat16):
        pytest.skip("oneDNN has no bfloat16 on this CPU")
    torch.manual_seed(2)
    linear = torch.nn.Linear(384, 384).to(torch.bfloat16).eval()
    x = torch.randn(16, 384).to(torch.bfloat16)
    with torch.inference_mode():
        ours = PackedLinear(linear)(x).double().numpy()
    exact = x.double().numpy() @ linear.weight.detach().double().numpy().T + linear.bias.detach().double().numpy()
    magnitudes = np.abs(x.double().numpy()) @ np.abs(linear.weight.detach().double().numpy().T)
    # float32 sums of exact bf16 products, then one rounding to bfloat16 (8 bits: half a step is 2**-8 relative).
    allowed = gamma(385) * (magnitudes + np.abs(linear.bias.detach().double().numpy())) + 2.0**-8 * np.abs(exact)
    assert (np.abs(ours - exact) <= allowed * (1 + 2.0**-8)).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_packs_and_keeps_transformers_forward(tiny_models, family):
    net = tiny_models[family].torch_model()
    packed = packed_copy(net)
    assert packed is not net and can_pack(net)
    assert any(isinstance(m, torch.nn.Linear) for m in net.modules())
    assert not any(isinstance(m, torch.nn.Linear) for m in packed.modules())  # each one packed, fused or replaced
    attention = {
        "bert": SelfAttention,
        "roberta": SelfAttention,
        "xlm-roberta": SelfAttention,
        "electra": SelfAttention,
    }
    attention |= {"distilbert": FusedProjections, "albert": FusedProjections, "deberta-v2": FusedProjections}
    if family in attention:  # modernbert computes query, key and value as one product already
        assert any(isinstance(m, attention[family]) for m in packed.modules())
    assert not any(isinstance(m, PackedLinear) for m in net.modules())  # the model itself untouched
    assert_same_forward(tiny_models[family], packed, net)


@pytest.mark.parametrize("family", ["bert", "roberta", "electra"])
def test_short_attention_path_keeps_transformers_forward(tiny_models, family):
    net = tiny_models[family].torch_model()
    packed = packed_copy(net)
    attentions = [m for m in packed.modules() if isinstance(m, SelfAttention)]
    assert attentions
    for attention in attentions:  # the batched-products path for every length (bfloat16's, below 96)
        attention.short = 10**6
    assert_same_forward(tiny_models[family], packed, net)


def assert_close(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    """Two passes of one network, summed in two orders, states (..., H) of real tokens: float64 ones within float64's
    rounding of the largest value (`float64_wobble`); float32 ones pointing the same way (a wiring mistake, a lost
    mask, GELU or bias, would turn them far more than float32 rounding can)."""
    if ours.dtype == torch.float64:
        assert ours.shape == theirs.shape
        assert ((ours - theirs).abs() <= float64_wobble(float(theirs.abs().max()))).all()
        return
    cosines = torch.nn.functional.cosine_similarity(ours.double(), theirs.double(), dim=-1)
    assert cosines.min() > 1 - 1e-6


def assert_same_forward(model, packed, net) -> None:
    """Two passes of one network (float32, or a float64 twin's) over a padded batch and, where it takes them, a ragged
    one: each layer's states of the real tokens agree (`assert_close`)."""
    tokenizer = model.vocabulary.tokenizer
    rows = [tokenizer.encode(text).ids for text in ("the cat sat on the mat", "a dog")]
    ids = torch.zeros((2, len(rows[0])), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, found in enumerate(rows):
        ids[row, : len(found)], mask[row, : len(found)] = torch.tensor(found), 1
    with torch.inference_mode():
        ours = torch.stack(packed(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
        theirs = torch.stack(net(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
    keep = mask.bool()
    assert_close(ours[:, keep], theirs[:, keep])
    if any(isinstance(m, SelfAttention) for m in packed.modules()):  # the same rows as a ragged batch, no padding
        order = [1, 1, 0]  # a group of two rows of one length, then a group of one
        first = (model.config.pad_token_id or 0) + 1 if model.family.position_scheme == "absolute-offset" else 0
        flat = torch.tensor([token for row in order for token in rows[row]])[None]  # (1, tokens)
        positions = torch.cat([torch.arange(first, first + len(rows[row])) for row in order])[None]
        groups = Ragged(((0, 2, len(rows[1])), (2 * len(rows[1]), 1, len(rows[0]))))
        with torch.inference_mode():
            out = packed(
                input_ids=flat,
                position_ids=positions,
                token_type_ids=torch.zeros_like(flat),
                ragged=groups,
                output_hidden_states=True,
            )
        ragged = torch.stack(out.hidden_states)[:, 0]  # (layers, tokens, H)
        padded = torch.cat([theirs[:, row, : len(rows[row])] for row in order], dim=1)  # (layers, tokens, H)
        assert_close(ragged, padded)


def test_product_rows_are_a_short_ladder():
    ladder = {product_rows(rows) for rows in range(1, 2049)}
    assert ladder == {16, 32, 64, 128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048}
    assert all(product_rows(rows) >= rows for rows in range(0, 5000))
    assert product_rows(2048) == 2048 and product_rows(2049) == 2304 and product_rows(0) == 16


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads the resident size from /proc")
def test_ever_new_row_counts_keep_memory_flat():
    # oneDNN keeps a primitive, megabytes each, for every row count it is given: 200 batches of 200 sizes grew a
    # process by ~2 MB a size. Padded to product_rows, they make three sizes.
    torch.manual_seed(5)
    linear = torch.nn.Linear(384, 1536).eval()
    packed = PackedLinear(linear)
    with torch.inference_mode():
        packed(torch.randn(2048, 384))
        before = resident_mb()
        for rows in range(1600, 2000, 2):
            x = torch.randn(rows, 384)
            y = packed(x)
        grown = resident_mb() - before
    assert y.shape == (1998, 1536)
    assert (np.abs(y.double().numpy() - product(linear, x)) <= bound(linear, x)).all()  # padding rows dropped
    assert grown < 100  # 200 sizes at ~2 MB each would be ~400 MB


def test_fused_projections_are_the_three_products():
    torch.manual_seed(3)
    linears = [torch.nn.Linear(48, 48).eval() for _ in range(3)]
    fused = FusedProjections(linears)
    x, y = torch.randn(2, 5, 48), torch.randn(2, 5, 48)
    with torch.inference_mode():
        parts = [ProjectionPart(fused, i)(x) for i in range(3)]  # the first computes all three
        other = ProjectionPart(fused, 1)(y)  # another input: computed again, never a stale product
        again = ProjectionPart(fused, 1)(x)  # the same input asked twice for one part: computed again
    for linear, part in zip(linears, parts, strict=True):
        rows = x.reshape(-1, 48)
        error = np.abs(part.reshape(-1, 48).double().numpy() - product(linear, rows))
        assert part.shape == (2, 5, 48) and (error <= bound(linear, rows)).all()
    assert torch.equal(again, parts[1])
    rows = y.reshape(-1, 48)
    assert (np.abs(other.reshape(-1, 48).double().numpy() - product(linears[1], rows)) <= bound(linears[1], rows)).all()


def test_the_probe_finds_onednn_where_pytorch_has_it():
    assert onednn_products(torch.float32)  # oneDNN is there (this file's skip mark): its float32 products run
    assert onednn_products(torch.bfloat16) == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert not onednn_products(torch.float64) and not onednn_products(torch.float16)


def public_modules_only(packed: torch.nn.Module) -> None:
    """No oneDNN product; query, key and value as one plain `nn.Linear` wherever they were fused."""
    assert not any(isinstance(m, PackedLinear) for m in packed.modules())
    products = [m.product for m in packed.modules() if isinstance(m, FusedProjections)]
    products += [m.projections for m in packed.modules() if isinstance(m, SelfAttention)]
    assert all(type(product) is torch.nn.Linear for product in products)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_forced_public_fallback_keeps_transformers_forward(tiny_models, family):
    """`prepack=False`: PyTorch's public modules alone (`nn.Linear`, the GELU module), as where the probe finds no
    oneDNN; in float32 against transformers' float32 pass, and a float64 twin's within float64's rounding."""
    model = tiny_models[family]
    net = model.torch_model()
    plain = packed_copy(net, prepack=False)
    assert can_pack(net)  # oneDNN is there, and left alone
    assert (plain is net) == (family == "modernbert")  # its query, key and value are one product already: no copy
    public_modules_only(plain)
    assert any(isinstance(m, torch.nn.Linear) for m in plain.modules())
    if family in ("bert", "roberta", "xlm-roberta", "electra"):
        assert any(isinstance(m, SelfAttention) for m in plain.modules())
        gelus = [m.intermediate_act_fn for m in plain.modules() if hasattr(m, "intermediate_act_fn")]
        assert gelus and not any(isinstance(act, torch.nn.Identity) for act in gelus)  # GELU stays a module
    assert_same_forward(model, plain, net)
    twin = float64_twin(model)
    assert_same_forward(twin, packed_copy(twin.torch_model(), prepack=False), twin.torch_model())


def test_the_runs_model_takes_the_fallback_when_asked(tiny_models):
    model = tiny_models["bert"]
    plain = inference_model(model, "cpu", "float32", prepack=False)
    public_modules_only(plain)
    assert plain is inference_model(model, "cpu", "float32", prepack=False)  # made once
    assert any(isinstance(m, PackedLinear) for m in inference_model(model, "cpu", "float32").modules())


def test_a_float64_model_keeps_its_products(tiny_models):
    # oneDNN has no float64 (the tests' twins): their linear layers stay, only BERT-style attention becomes
    # SelfAttention (for ragged batches), its query, key and value one plain product.
    double = float64_twin(tiny_models["bert"]).torch_model()
    copied = packed_copy(double)
    assert not can_pack(double) and copied is not double
    assert not any(isinstance(m, PackedLinear) for m in copied.modules())
    attentions = [m for m in copied.modules() if isinstance(m, SelfAttention)]
    assert attentions and all(type(a.projections) is torch.nn.Linear for a in attentions)
    plain = torch.nn.Sequential(torch.nn.Linear(3, 3).double())
    assert packed_copy(plain) is plain  # nothing to change: the model itself, not a copy
