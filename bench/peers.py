"""The peers of bench/contextual.py: the plain transformers loop and sentence-transformers' backends, in any venv.

Each peer configuration encodes the same sentences into token vectors: batches of 32, `output_value=
"token_embeddings"` (last layer, every token), the model loaded from a copy of the default model's folder, offline.
A `Peers` object sets its configurations up once (exports included, into a work folder, never the source folder),
then runs one configuration at a time when asked, so the driver can interleave them with bertlens' rows.

Run by the driver in this process, or in another venv as a worker speaking JSON lines on stdin/stdout:

    python bench/peers.py --serve     # {"op": "setup", ...} / {"op": "run", "name": ...} / {"op": "quit"}

The venvs the ONNX and OpenVINO backends need (they cannot share the project's: see VENVS), made by:

    python bench/peers.py --install [--peers-dir DIR]   # DIR/venv-peers (openvino), DIR/venv-peers-onnx (onnx)

`DIR` is any folder outside the repository; by default the folder that holds the repository (the venvs sit beside
it, never inside it). pip installs the pinned versions of VENVS.

Configurations (`name`: what it runs):

* `transformers`: AutoModel, batches of 32 in corpus order padded to the longest, `output_hidden_states=True`.
* `st-torch-f32`, `st-torch-bf16`: SentenceTransformer(backend="torch"), float32 / `model_kwargs={"dtype": bfloat16}`.
* `st-onnx`, `st-onnx-O3`, `st-onnx-int8`: backend="onnx": the default export; `export_optimized_onnx_model`
  ("O3", the highest CPU level); `export_dynamic_quantized_onnx_model` ("avx512_vnni").
* `st-openvino-f32`, `st-openvino-bf16`: backend="openvino" with `ov_config={"INFERENCE_PRECISION_HINT": "f32"}` /
  `"bf16"` (OpenVINO's own default on the CPU is read and reported: bf16 where the CPU has AVX512-BF16 or AMX).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

CONFIGS = {
    "transformers": "plain transformers loop (AutoModel, output_hidden_states), float32",
    "st-torch-f32": 'sentence-transformers backend="torch", float32',
    "st-torch-bf16": 'sentence-transformers backend="torch", bfloat16 (model_kwargs dtype)',
    "st-onnx": 'sentence-transformers backend="onnx", its default export, float32',
    "st-onnx-O3": 'sentence-transformers backend="onnx", export_optimized_onnx_model "O3"',
    "st-onnx-int8": 'sentence-transformers backend="onnx", export_dynamic_quantized_onnx_model "avx512_vnni" (int8)',
    "st-openvino-f32": 'sentence-transformers backend="openvino", INFERENCE_PRECISION_HINT f32',
    "st-openvino-bf16": 'sentence-transformers backend="openvino", INFERENCE_PRECISION_HINT bf16',
}
PRECISION = {
    "transformers": "float32",
    "st-torch-f32": "float32",
    "st-torch-bf16": "bfloat16",
    "st-onnx": "float32",
    "st-onnx-O3": "float32",
    "st-onnx-int8": "int8",
    "st-openvino-f32": "float32",
    "st-openvino-bf16": "bfloat16",
}
BATCH = 32
# The folder the peers' venvs are made in unless --peers-dir says otherwise: the one holding the repository.
DEFAULT_PEERS_DIR = Path(__file__).resolve().parents[2]
# venv folder name (inside the peers folder) -> (why not the project's venv, the pinned packages that installed and
# ran). torch 2.13.0 is the project's CPU wheel; torchvision (pulled by optimum-intel, never used) is removed: the PyPI
# wheel fails against CPU torch.
VENVS = {
    "venv-peers": (
        "optimum-intel 2.2.0 (sentence-transformers[openvino]) needs transformers < 5.6; the project has 5.23.0",
        [
            "torch==2.13.0",
            "numpy==2.4.6",
            "sentence-transformers[openvino]==6.2.0",
            "transformers==5.5.4",
            "optimum-intel==2.2.0",
            "optimum==2.3.0",
            "openvino==2026.4.1",
            "nncf==3.4.0",
        ],
    ),
    "venv-peers-onnx": (
        "sentence-transformers 6.2.0[onnx] cannot resolve anywhere: optimum-onnx <= 0.1.0 needs transformers < 4.58,"
        " sentence-transformers 6 needs >= 5; so sentence-transformers 5.7.0 + transformers 4.57.6",
        [
            "torch==2.13.0",
            "numpy==2.4.6",
            "sentence-transformers[onnx]==5.7.0",
            "transformers==4.57.6",
            "optimum-onnx==0.1.0",
            "optimum==2.1.0",
            "onnxruntime==1.32.0",
            "onnx==1.23.2",
        ],
    ),
}


def versions() -> dict[str, str]:
    """Installed versions of the packages the peers use (absent ones left out)."""
    from importlib import metadata

    found = {}
    for name in (
        "torch",
        "transformers",
        "tokenizers",
        "numpy",
        "sentence-transformers",
        "optimum",
        "optimum-onnx",
        "optimum-intel",
        "onnxruntime",
        "onnx",
        "openvino",
    ):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    return found


def ov_precision(model: Any) -> str:
    """The inference precision an OpenVINO-backed SentenceTransformer was compiled with."""
    compiled = model[0].auto_model.request  # an openvino CompiledModel (compiled on load)
    if compiled is None:
        return "?"
    hint = compiled.get_property("INFERENCE_PRECISION_HINT")  # an openvino Type
    return hint.to_string() if hasattr(hint, "to_string") else str(hint)


class Peers:
    """Peer configurations set up once over the same sentences; `run(name)` encodes them all once."""

    def __init__(self, model_path: str, sentences: list[str], workdir: str) -> None:
        self.sentences = sentences
        self.work = Path(workdir)
        self.source = self.work / "model"  # a copy: exports write beside the model, never into the source folder
        if not self.source.exists():
            shutil.copytree(model_path, self.source)
        self.encoders: dict[str, Any] = {}
        self.notes: dict[str, str] = {}  # name -> what it actually ran with (precision hint, file)

    def setup(self, names: list[str]) -> dict[str, str]:
        """Load (and export) each configuration; returns name -> error line for those that failed."""
        errors = {}
        for name in names:
            try:
                self.encoders[name] = self.load(name)
            except Exception as error:
                errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]
                traceback.print_exc(file=sys.stderr)
        return errors

    def load(self, name: str) -> Any:
        import torch

        if name == "transformers":
            from transformers import AutoModel, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.source)
            net = AutoModel.from_pretrained(self.source).eval()
            return tokenizer, net
        from sentence_transformers import SentenceTransformer

        if name == "st-torch-f32":
            return SentenceTransformer(str(self.source), device="cpu")
        if name == "st-torch-bf16":
            return SentenceTransformer(str(self.source), device="cpu", model_kwargs={"dtype": torch.bfloat16})
        if name.startswith("st-onnx"):
            return self.load_onnx(name)
        if name.startswith("st-openvino"):
            folder = self.work / "openvino"
            if not folder.exists():
                exported = SentenceTransformer(str(self.source), backend="openvino", device="cpu")
                exported.save_pretrained(str(folder))
                self.notes["openvino-default"] = f"OpenVINO's default precision here: {ov_precision(exported)}"
            kwargs = {"ov_config": {"INFERENCE_PRECISION_HINT": "bf16" if name.endswith("bf16") else "f32"}}
            model = SentenceTransformer(str(folder), backend="openvino", device="cpu", model_kwargs=kwargs)
            self.notes[name] = f"compiled with INFERENCE_PRECISION_HINT {ov_precision(model)}"
            return model
        raise ValueError(f"unknown peer configuration {name!r}")

    def load_onnx(self, name: str) -> Any:
        from sentence_transformers import (
            SentenceTransformer,
            export_dynamic_quantized_onnx_model,
            export_optimized_onnx_model,
        )

        folder = self.work / "onnx"
        if not folder.exists():
            exported = SentenceTransformer(str(self.source), backend="onnx", device="cpu")
            exported.save_pretrained(str(folder))
        file_name = "onnx/model.onnx"
        base = SentenceTransformer(str(folder), backend="onnx", device="cpu", model_kwargs={"file_name": file_name})
        if name == "st-onnx-O3":
            if not (folder / "onnx" / "model_O3.onnx").exists():
                export_optimized_onnx_model(base, "O3", str(folder))
            file_name = "onnx/model_O3.onnx"
        elif name == "st-onnx-int8":
            if not (folder / "onnx" / "model_qint8_avx512_vnni.onnx").exists():
                export_dynamic_quantized_onnx_model(base, "avx512_vnni", str(folder))
            file_name = "onnx/model_qint8_avx512_vnni.onnx"
        else:
            return base
        self.notes[name] = file_name
        return SentenceTransformer(str(folder), backend="onnx", device="cpu", model_kwargs={"file_name": file_name})

    def run(self, name: str, keep: bool = False) -> list[Any] | None:
        """Encode every sentence once with `name`; the last layer's (tokens, H) float32 arrays when keep."""
        import numpy as np
        import torch

        encoder = self.encoders[name]
        if name == "transformers":
            tokenizer, net = encoder
            kept = []
            for start in range(0, len(self.sentences), BATCH):
                batch = tokenizer(self.sentences[start : start + BATCH], padding=True, return_tensors="pt")
                with torch.inference_mode():
                    out = net(**batch, output_hidden_states=True)
                    states = torch.stack(out.hidden_states)  # (layers + 1, batch, tokens, H)
                if keep:
                    lengths = batch["attention_mask"].sum(1).tolist()
                    kept += [states[-1, i, :n].float().numpy() for i, n in enumerate(lengths)]
            return kept if keep else None
        out = encoder.encode(self.sentences, output_value="token_embeddings", batch_size=BATCH, convert_to_numpy=False)
        if keep:
            return [np.asarray(t.float().cpu().numpy() if hasattr(t, "float") else t, dtype=np.float32) for t in out]
        return None


def serve() -> int:
    """JSON lines on stdin -> JSON lines on stdout (stdout is reserved for replies; logs go to stderr)."""
    reply_to = sys.stdout
    sys.stdout = sys.stderr
    peers: Peers | None = None

    def reply(message: dict[str, Any]) -> None:
        reply_to.write(json.dumps(message) + "\n")
        reply_to.flush()

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "quit":
            break
        try:
            if op == "setup":
                sentences = json.loads(Path(request["sentences"]).read_text(encoding="utf-8"))
                peers = Peers(request["model"], sentences, request["workdir"])
                errors = peers.setup(request["names"])
                reply({"errors": errors, "notes": peers.notes, "versions": versions()})
            elif op == "run":
                assert peers is not None
                start = time.perf_counter()
                kept = peers.run(request["name"], keep=bool(request.get("keep")))
                seconds = time.perf_counter() - start
                if kept is not None:
                    import numpy as np

                    np.savez(request["keep"], *kept)
                reply({"seconds": seconds})
        except Exception as error:
            traceback.print_exc(file=sys.stderr)
            reply({"error": f"{type(error).__name__}: {error}"[:300]})
    return 0


def venv_paths(peers_dir: Path = DEFAULT_PEERS_DIR) -> dict[str, Path]:
    """Where each venv of VENVS lies (or will lie) under `peers_dir`."""
    return {name: Path(peers_dir) / name for name in VENVS}


def install(peers_dir: Path = DEFAULT_PEERS_DIR) -> int:
    """Make each venv of VENVS in `peers_dir` (outside the repository) and pip-install its pins."""
    import subprocess

    for name, venv in venv_paths(peers_dir).items():
        pins = VENVS[name][1]
        pip = venv / "bin" / "pip"
        if not pip.exists():
            venv.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # the project's venv's interpreter
        subprocess.run([str(pip), "install", *pins], check=True)
        subprocess.run([str(pip), "uninstall", "-y", "torchvision"], check=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", action="store_true", help="answer JSON-line requests on stdin")
    parser.add_argument("--install", action="store_true", help="make the peers' venvs (VENVS) with pip")
    parser.add_argument(
        "--peers-dir",
        type=Path,
        default=DEFAULT_PEERS_DIR,
        help=f"the folder the peers' venvs go in (default: the one holding the repository, {DEFAULT_PEERS_DIR})",
    )
    args = parser.parse_args()
    if args.serve:
        return serve()
    if args.install:
        repository = Path(__file__).resolve().parents[1]
        if args.peers_dir.resolve().is_relative_to(repository):
            parser.error(f"--peers-dir {args.peers_dir} is inside the repository: give a folder outside it")
        return install(args.peers_dir)
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
