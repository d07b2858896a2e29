"""--precision auto: bfloat16 exactly where the CPU computes it natively and the fidelity probe keeps cosine >= 0.999
with float32 in every layer, float32 otherwise, and the reason said.

The choice is forced both ways in fresh interpreters: with ATEN_CPU_CAPABILITY=avx2 and ONEDNN_MAX_CPU_ISA=AVX2 it
must be float32 on any CPU; without caps it must be bfloat16 exactly when /proc/cpuinfo has amx_bf16 or avx512_bf16
(and then the default model's probe reaches the bound in every layer). A tiny model built here fails the probe by
construction, so auto keeps float32 for it on every CPU and names the layer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertlens import load_model
from bertlens.cli import main
from bertlens.contextual import RunOptions, hidden_states
from bertlens.core.errors import InputError
from bertlens.core.precision import FIDELITY, ISAS, NATIVE, choose_precision, cpu_isa, cuda_precision, probe

CPUINFO = Path("/proc/cpuinfo")
CAPS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
BIG = 2.0**16  # bfloat16 keeps 8 significant bits: numbers near 2**16 are 256 apart, float32's 1/128 apart


def native_by_flags() -> bool:
    """What the first processor's flags say: bfloat16 computed natively (AMX or AVX512-BF16)."""
    for line in CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            return bool(flags & {"amx_bf16", "avx512_bf16"})
    return False


@pytest.fixture(scope="module")
def poor_dir(tiny_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tiny BERT, its first layer's attention output given a bias of 2**16 in every dimension.

    That layer adds the bias to the residual stream (entries of size ~1-3) before its LayerNorm: float32 keeps the
    small part (spacing 1/128 at 2**16), bfloat16 rounds every entry to exactly 2**16 (spacing 256; |x| < 128), so the
    LayerNorm sees a constant vector and layer 1 loses its token's information: cosine far below 0.999 by
    construction. The embedding output (layer 0) is untouched."""
    from safetensors.numpy import load_file, save_file

    directory = tmp_path_factory.mktemp("poor") / "bert"
    shutil.copytree(tiny_dirs["bert"], directory)
    weights = load_file(directory / "model.safetensors")
    name = "encoder.layer.0.attention.output.dense.bias"
    weights[name] = np.full_like(weights[name], BIG)
    save_file(weights, directory / "model.safetensors", metadata={"format": "pt"})
    return directory


@pytest.fixture(scope="module")
def forced() -> dict[str, dict]:
    """`bertlens precision --json` in two fresh interpreters at once: capped to AVX2, and without caps."""
    base = {k: v for k, v in os.environ.items() if k not in CAPS}
    envs = {"capped": base | {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}, "free": base}
    command = [sys.executable, "-m", "bertlens", "precision", "--json"]
    runs = {
        name: subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, env in envs.items()
    }
    found = {}
    for name, run in runs.items():
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-2000:]
        found[name] = json.loads(out)
    return found


def test_capped_to_avx2_auto_is_float32_and_says_why(forced):
    choice = forced["capped"]
    assert choice["dtype"] == "float32" and choice["asked"] == "auto"
    assert choice["isa"] in ISAS[:2]  # AVX2, or baseline on a CPU without it
    assert "emulated" in choice["reason"] and choice["min_cosine"] == []  # decided before any probe
    if CPUINFO.exists() and native_by_flags():  # the hardware has it: the caps are named as the reason
        assert "ONEDNN_MAX_CPU_ISA=AVX2" in choice["reason"]
    assert "ATen AVX2, set by ATEN_CPU_CAPABILITY=avx2" in choice["found"]


@pytest.mark.skipif(not CPUINFO.exists(), reason="the expectation is read from /proc/cpuinfo")
def test_uncapped_auto_is_bfloat16_exactly_where_the_cpu_has_it(forced):
    choice = forced["free"]
    native = native_by_flags()
    assert choice["dtype"] == ("bfloat16" if native else "float32"), choice["reason"]
    assert (ISAS.index(choice["isa"]) >= NATIVE) == native
    if native:  # the default model's probe: every layer (0..6) within the bound
        assert len(choice["min_cosine"]) == 7
        assert min(choice["min_cosine"]) >= FIDELITY
        assert choice["isa"] in choice["reason"] and "in every layer" in choice["reason"]


def test_a_model_that_loses_fidelity_in_bfloat16_keeps_float32_and_the_layer_is_named(poor_dir):
    model = load_model(str(poor_dir))
    cosines = probe(model, "cpu")
    assert len(cosines) == 3  # embedding output + 2 layers
    assert cosines[0] >= FIDELITY > cosines[1]
    choice = choose_precision(model, "auto", "cpu")
    assert choice.dtype == "float32"
    if ISAS.index(choice.isa) >= NATIVE:  # probed: the layer that fell short is named
        assert "at layer 1" in choice.reason and choice.min_cosine == cosines
    # the library's RunOptions(dtype="auto") resolves the same way: the run is float32, number for number
    auto = hidden_states(model, "the cat sat on the mat.", options=RunOptions(dtype="auto"))[0].states
    exact = hidden_states(model, "the cat sat on the mat.", options=RunOptions(dtype="float32"))[0].states
    assert np.array_equal(auto, exact)


def test_precision_json_is_the_choice_and_auto_is_said_on_stderr(poor_dir, capsys):
    assert main(["precision", "--model", str(poor_dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == choose_precision(load_model(str(poor_dir)), "auto", "cpu").to_dict()
    assert main(["layers", "the cat", "--model", str(poor_dir), "--precision", "auto"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("precision: float32 (auto: ") and err.count("precision:") == 1


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--precision", "float32", "--bf16"], "--bf16 and --precision float32 were both given"),
        (["--precision", "auto", "--bf16"], "--bf16 and --precision auto were both given"),
        (["--precision", "float16"], "float16 runs on CUDA GPUs only"),
    ],
)
def test_bad_precision_flags_are_refused_with_a_hint(poor_dir, capsys, flags, said):
    assert main(["layers", "the cat", "--model", str(poor_dir), *flags, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "InputError" and said in error["message"] and error["hint"]


def test_an_unknown_precision_is_refused_naming_the_choices(poor_dir, capsys):
    assert main(["layers", "the cat", "--model", str(poor_dir), "--precision", "fp8", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"] == "UsageError" and "'fp8' is not one of 'auto', 'float32', 'bfloat16'" in error["message"]


def test_the_isa_comes_from_cpuinfo_capped_by_onednn(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Some  CPU\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\n")
    free = cpu_isa({}, str(info))
    assert (free.name, ISAS[free.hardware], free.source) == ("Some CPU", "AVX512-BF16", str(info))
    capped = cpu_isa({"ONEDNN_MAX_CPU_ISA": "avx512_core"}, str(info))
    assert capped.usable < NATIVE and "ONEDNN_MAX_CPU_ISA=AVX512_CORE" in capped.caps
    elsewhere = cpu_isa({}, str(tmp_path / "missing"))  # no /proc/cpuinfo (not Linux): torch's own cpuinfo, said so
    assert elsewhere.source.startswith("torch's cpuinfo") and elsewhere.name


def test_unknown_precision_and_device_are_input_errors():
    with pytest.raises(InputError, match="precision"):
        choose_precision(None, "fp8", "cpu")
    with pytest.raises(InputError, match="device"):
        choose_precision(None, "auto", "tpu")


def test_float16_off_cuda_is_refused_with_a_hint():
    with pytest.raises(InputError, match="float16 runs on CUDA GPUs only") as raised:
        choose_precision(None, "float16", "cpu")
    assert "bfloat16" in raised.value.hint
    with pytest.raises(InputError, match="float16 runs on CUDA GPUs only"):
        RunOptions(dtype="float16")  # the CPU is the default device: refused before any model runs


@pytest.mark.parametrize(
    ("capability", "dtype"),
    [
        ((9, 0), "bfloat16"),
        ((8, 6), "bfloat16"),
        ((8, 0), "bfloat16"),
        ((7, 5), "float16"),
        ((7, 0), "float16"),
        ((6, 1), None),
        ((5, 2), None),
    ],
)
def test_a_gpu_gets_the_precision_its_tensor_cores_compute(capability, dtype):
    assert cuda_precision(capability) == dtype  # H100/A100: bfloat16; T4/V100: float16; Pascal and older: none
