"""The outside oracle for the embedding-layer check: transformers' own `hidden_states[0]`, computed here.

`explain(...).matches` is bertlens' own verdict on its own comparison. Tests hold it to a forward pass run by
transformers itself, from a model it loads from the directory (not bertlens' loader), so a check that compared the
wrong numbers, or read the weights wrong, fails here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch


@functools.cache
def transformers_model(path: Path) -> Any:
    """The base model as transformers loads it from `path`, in float32 (bfloat16 widens exactly) and eval mode
    (dropout off); loaded once per directory."""
    import transformers
    from transformers import AutoModel

    transformers.logging.set_verbosity_error()  # an MLM checkpoint's unused head weights are expected here
    transformers.utils.logging.disable_progress_bar()
    return AutoModel.from_pretrained(str(path), local_files_only=True).float().eval()


def hidden_states_0(net: Any, result: Any) -> np.ndarray:
    """transformers' `hidden_states[0]` for the token ids and segments of an `explain` result: (tokens, H)."""
    ids = torch.tensor([[t.id for t in result.tokens]])  # (1, tokens)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if result.tokens[0].token_type_id is not None:
        inputs["token_type_ids"] = torch.tensor([[t.token_type_id for t in result.tokens]])
    with torch.inference_mode():
        return net(**inputs, output_hidden_states=True).hidden_states[0][0].float().numpy()


def assert_agrees_with_transformers(result: Any, net: Any) -> np.ndarray:
    """The result's check says what transformers says: its output, and the model's side it was compared with, are
    transformers' own `hidden_states[0]`, bit for bit, and the check names transformers' class and version."""
    import transformers

    oracle = hidden_states_0(net, result)  # (tokens, H)
    ours = result.matrix("output")  # (tokens, H)
    assert ours.shape == oracle.shape
    np.testing.assert_array_equal(ours, oracle)
    np.testing.assert_array_equal(result.matrix("model_output"), oracle)
    assert result.max_abs_diff == 0.0 and result.matches
    assert result.checked_against.startswith(f"transformers {transformers.__version__} ")
    return oracle
