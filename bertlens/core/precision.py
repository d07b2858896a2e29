"""Which precision runs the model: float32, bfloat16, float16 (CUDA only), or "auto" (the fastest that keeps
fidelity on this machine).

Auto on a CPU picks bfloat16 where oneDNN computes it natively (AMX-BF16 or AVX512-BF16 in /proc/cpuinfo, not capped
by ONEDNN_MAX_CPU_ISA), else float32: emulated bfloat16 is slower than float32 (docs/benchmarks.md, "Precision
auto"). ATEN_CPU_CAPABILITY (torch's reading of it is reported) moves only ATen's elementwise kernels: the products,
nearly all the work, stay in oneDNN, and bfloat16 measured faster than float32 under ATen AVX2 alone. On CUDA auto
picks bfloat16 on GPUs whose tensor cores compute it (compute capability 8.0 on: A100, RTX 30xx, H100), float16 on
those with float16 tensor cores only (7.0 on: V100, T4, RTX 20xx), else float32. Before a reduced precision is
picked, a fidelity probe runs PROBE_TEXTS in float32 and in it: every layer's smallest cosine between the two must
reach FIDELITY, or auto keeps float32 and says which layer fell short. The environment is only read, never written.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, cast

from .errors import InputError
from .options import PRECISIONS, check_choice
from .results import Result, table

if TYPE_CHECKING:
    from .model import Model

Dtype = Literal["float32", "bfloat16", "float16"]  # what a run computes in (PRECISIONS without "auto")
FLOAT16_OFF_CUDA = "float16 runs on CUDA GPUs only: the CPU's float16 products are emulated, slower than float32."
FIDELITY = 0.999  # the bound: the smallest cosine with float32 in every layer
# A handful of fixed sentences: subwords, punctuation, digits, an e-mail address, non-ASCII letters.
PROBE_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "Unbelievably, the antidisestablishmentarianism debate resurfaced!",
    "She said: \"It's 3.14 (roughly pi), isn't it?\"",
    "Tokenizers split photosynthesis and cryptocurrencies into word pieces.",
    "I went to the bank; the river bank was flooded again...",
    "Write to jürgen.müller@example.com before 10:30 on 2024-06-01.",
)
# What the CPU offers for bfloat16, weakest first; the last two compute it natively.
ISAS = ("baseline", "AVX2", "AVX-512", "AVX512-BF16", "AMX-BF16")
NATIVE = 3  # ISAS[3:] run bfloat16 natively
# oneDNN's ISA names (ONEDNN_MAX_CPU_ISA) -> the highest of ISAS that they allow.
ONEDNN_CAPS = {
    **dict.fromkeys(("SSE41", "AVX"), 0),
    **dict.fromkeys(("AVX2", "AVX2_VNNI", "AVX2_VNNI_2"), 1),
    **dict.fromkeys(("AVX512_CORE", "AVX512_CORE_VNNI"), 2),
    **dict.fromkeys(("AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512", "AVX10_2_512"), 3),
    **dict.fromkeys(("AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16", "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16"), 4),
    **dict.fromkeys(("AVX10_2_512_AMX_2", "ALL", "DEFAULT"), 4),
}


@dataclass(frozen=True, repr=False)
class PrecisionChoice(Result):
    """The dtype a run uses, the precision that was asked for, and why this one (with what auto found)."""

    dtype: Dtype
    asked: str
    reason: str
    device: str = "cpu"
    cpu: str = ""  # the processor (or GPU) auto looked at
    isa: str = ""  # the best of ISAS oneDNN may use here, after ONEDNN_MAX_CPU_ISA ("" unless auto ran on a CPU)
    found: str = ""  # how the ISA was found: /proc/cpuinfo or torch, the oneDNN cap, ATen's capability
    min_cosine: tuple[float, ...] = ()  # the probe's smallest cosine with float32 per layer (0 = embedding output)
    bound: float = FIDELITY
    probed: str = "bfloat16"  # the reduced precision the probe ran

    @property
    def line(self) -> str:
        """One line for standard error: `precision: bfloat16 (auto: ...)`."""
        return f"precision: {self.dtype} ({self.reason})"

    def to_table(self) -> str:
        lines = [self.line]
        if self.device == "cuda" and self.cpu:
            lines.append(f"GPU: {self.cpu} ({self.found})")
        elif self.cpu:
            lines.append(f"processor: {self.cpu}")
        if self.device != "cuda" and (self.isa or self.found):
            lines.append(f"ISA: {self.isa or '-'} ({self.found})")
        text = "\n".join(lines)
        if self.min_cosine:
            cosines = enumerate(self.min_cosine)
            rows = [(layer, f"{c:.6f}", "yes" if c >= self.bound else "NO") for layer, c in cosines]
            head = ["layer", f"min cosine, {self.probed} vs float32", f">= {self.bound}"]
            note = f"Layer 0 is the embedding output; the probe ran {len(PROBE_TEXTS)} fixed sentences."
            text += f"\n\n{table(head, rows)}\n{note}"
        return text


@dataclass(frozen=True)
class CpuIsa:
    """What the CPU offers for bfloat16, and what the environment lets torch use of it."""

    name: str  # the processor's model name
    hardware: int  # index into ISAS: the best the hardware has
    usable: int  # index into ISAS: what oneDNN may use (after ONEDNN_MAX_CPU_ISA)
    source: str  # where the flags came from
    caps: tuple[str, ...]  # the oneDNN cap that applied, e.g. "ONEDNN_MAX_CPU_ISA=AVX2"
    aten: str  # torch.backends.cpu.get_cpu_capability(), and ATEN_CPU_CAPABILITY where set

    @property
    def found(self) -> str:
        caps = f"oneDNN capped by {', '.join(self.caps)}" if self.caps else "oneDNN not capped"
        return f"flags from {self.source}; {caps}; ATen {self.aten} (elementwise kernels only)"


def cpu_isa(env: Mapping[str, str] | None = None, cpuinfo: str = "/proc/cpuinfo") -> CpuIsa:
    """The CPU's bfloat16 ISA from `cpuinfo` (else torch's cpuinfo), capped by ONEDNN_MAX_CPU_ISA in `env`."""
    import torch

    env = os.environ if env is None else env
    name, flags = _read_cpuinfo(cpuinfo)
    if flags is not None:
        source = cpuinfo
    else:  # not Linux: torch's own cpuinfo library
        source = f"torch's cpuinfo (no {cpuinfo})"
        checks = {"amx_bf16": "_is_amx_tile_supported", "avx512_bf16": "_is_avx512_bf16_supported"}
        checks |= {"avx512f": "_is_avx512_supported", "avx2": "_is_avx2_supported"}
        flags = {flag for flag, check in checks.items() if getattr(torch.cpu, check, lambda: False)()}
        name = name or platform.processor() or platform.machine() or "unknown CPU"
    order = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
    hardware = max([0] + [i + 1 for i, flag in enumerate(order) if flag in flags])
    caps, usable = [], hardware
    onednn_name = "ONEDNN_MAX_CPU_ISA" if "ONEDNN_MAX_CPU_ISA" in env else "DNNL_MAX_CPU_ISA"
    onednn = env.get(onednn_name, "").strip().upper()
    if onednn in ONEDNN_CAPS and ONEDNN_CAPS[onednn] < hardware:
        usable = min(usable, ONEDNN_CAPS[onednn])
        caps.append(f"{onednn_name}={onednn}")
    aten = torch.backends.cpu.get_cpu_capability()  # ATen's own reading of ATEN_CPU_CAPABILITY and the CPU
    if env.get("ATEN_CPU_CAPABILITY"):
        aten += f", set by ATEN_CPU_CAPABILITY={env['ATEN_CPU_CAPABILITY']}"
    return CpuIsa(name, hardware, usable, source, tuple(caps), aten)


def _read_cpuinfo(path: str) -> tuple[str, set[str] | None]:
    """The first processor's model name and flags from /proc/cpuinfo; ("", None) where there is no such file."""
    name, flags = "", None
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not name:
                    name = " ".join(value.split())
                elif key == "flags" and flags is None:
                    flags = set(value.split())
                elif not line.strip() and (name or flags is not None):
                    break  # the first processor's block is enough
    except OSError:
        return "", None
    return name, flags


def choose_precision(model: Model | None, asked: str, device: str) -> PrecisionChoice:
    """The dtype for `asked` ("float32", "bfloat16", "float16" or "auto") on `device` ("cpu", "cuda" or "auto").

    Auto runs the fidelity probe on `model` (once per model, device and dtype) before it picks a reduced precision;
    without a model it decides by the hardware alone and says so. float16 off CUDA is refused."""
    check_choice(asked, PRECISIONS, "precision")
    if asked == "float16" and torch_device(device) != "cuda":
        raise InputError(
            FLOAT16_OFF_CUDA,
            "Run on a CUDA GPU ({device}), or use bfloat16 (native with AVX512-BF16 or AMX) or auto here.",
            arguments={"device": "cuda"},
        )
    if asked != "auto":
        return PrecisionChoice(cast(Dtype, asked), asked, "asked for", device=device)
    device = torch_device(device)
    low: Literal["bfloat16", "float16"] = "bfloat16"  # the reduced precision auto weighs
    if device == "cuda":
        import torch

        cpu, isa = torch.cuda.get_device_name(), ""
        capability = torch.cuda.get_device_capability()
        found = f"compute capability {capability[0]}.{capability[1]}"
        computed = cuda_precision(capability)
        native, low = computed is not None, computed or "bfloat16"
        where = f"{low} tensor cores on {cpu} ({found})"
        slower = f"{cpu} ({found}) has no bfloat16 or float16 tensor cores"
    else:
        found_isa = cpu_isa()
        cpu, isa, found = found_isa.name, ISAS[found_isa.usable], found_isa.found
        native = found_isa.usable >= NATIVE
        where = f"{isa} on {cpu}"
        if found_isa.hardware >= NATIVE:
            caps = ", ".join(found_isa.caps)
            slower = f"{ISAS[found_isa.hardware]} on {cpu}, capped at {isa} by {caps}: bfloat16 would be emulated"
        else:
            slower = f"{isa} on {cpu}, no native bfloat16 (AMX-BF16 or AVX512-BF16): bfloat16 would be emulated"
    base = PrecisionChoice("float32", asked, "", device=device, cpu=cpu, isa=isa, found=found, probed=low)
    if not native:
        return replace(base, reason=f"auto: {slower}, slower than float32")
    if model is None:
        return replace(base, dtype=low, reason=f"auto: {where}; fidelity not probed (no model given)")
    cosines = probe(model, device, low)
    short = [layer for layer, cosine in enumerate(cosines) if not cosine >= FIDELITY]  # NaN falls short too
    worst = min(range(len(cosines)), key=cosines.__getitem__)
    if short:
        fall = f"{low}'s cosine with float32 falls below {FIDELITY} at layer {short[0]} ({cosines[short[0]]:.4f}"
        fall += f"; lowest {cosines[worst]:.4f} at layer {worst})" if worst != short[0] else ")"
        return replace(base, reason=f"auto: {where}, but {fall}, so float32", min_cosine=cosines)
    floor = math.floor(cosines[worst] * 10_000) / 10_000
    reason = f"auto: {where}; cosine with float32 >= {floor:.4f} in every layer"
    return replace(base, dtype=low, reason=reason, min_cosine=cosines)


def cuda_precision(capability: tuple[int, int]) -> Literal["bfloat16", "float16"] | None:
    """The reduced precision a GPU of compute `capability` computes on tensor cores: bfloat16 from 8.0 (Ampere on),
    float16 from 7.0 (Volta, Turing), else None (`torch.cuda.is_bf16_supported()` also counts emulation)."""
    if capability >= (8, 0):
        return "bfloat16"
    return "float16" if capability >= (7, 0) else None


def torch_device(device: str) -> str:
    """The torch device: "auto" is CUDA when present, else the CPU; "cuda" without CUDA is refused."""
    import torch

    if device not in ("cpu", "cuda", "auto"):
        raise InputError(f"Unknown device {device!r}.", "Choose cpu, cuda or auto.")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError(
            "CUDA was asked for but no CUDA device is available.",
            "Use {device} (the default).",
            arguments={"device": "cpu"},
        )
    return device


def probe(model: Model, device: str, dtype: str = "bfloat16") -> tuple[float, ...]:
    """Per layer (0 = embedding output .. L), the smallest cosine between a token's `dtype` state on `device` and
    its float32 state on the CPU, over PROBE_TEXTS' tokens; computed once per model, device and dtype, with the
    models the runs use (core/packing.py)."""
    return tuple(model.remember(("precision-probe", device, dtype), lambda: _probe(model, device, dtype)))


def _probe(model: Model, device: str, dtype: str) -> tuple[float, ...]:
    import numpy as np
    import torch

    from .tokens import max_length

    limit = max_length(model) or 512
    encodings = [e.ids[:limit] for e in model.vocabulary.tokenizer.encode_batch(list(PROBE_TEXTS))]
    longest = max(len(ids) for ids in encodings)
    ids = torch.full((len(encodings), longest), model.config.pad_token_id or 0, dtype=torch.long)
    mask = torch.zeros((len(encodings), longest), dtype=torch.long)
    for row, found in enumerate(encodings):
        ids[row, : len(found)] = torch.tensor(found)
        mask[row, : len(found)] = 1
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if model.family.token_type_embeddings is not None and model.config.type_vocab_size > 0:
        kwargs["token_type_ids"] = torch.zeros_like(ids)

    def states(net: torch.nn.Module, on: str) -> np.ndarray:
        with torch.inference_mode():
            out = net(**{k: v.to(on) for k, v in kwargs.items()}, output_hidden_states=True).hidden_states
        return torch.stack(out).float().cpu().numpy().astype(np.float64)  # (layers + 1, texts, longest, H)

    from .packing import inference_model

    exact = states(inference_model(model, "cpu", "float32"), "cpu")
    rounded = states(inference_model(model, device, dtype), device)  # what a run in `dtype` uses
    real = mask.numpy().astype(bool)  # (texts, longest): tokens, not padding
    a, b = exact[:, real], rounded[:, real]  # (layers + 1, tokens, H)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)  # (layers + 1, tokens)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = (a * b).sum(-1) / norms
    cosine = np.where(norms == 0, (np.abs(a - b).max(-1) == 0).astype(float), cosine)  # zero vectors: equal or not
    return tuple(float(c) for c in np.nan_to_num(cosine, nan=0.0).min(axis=1))
