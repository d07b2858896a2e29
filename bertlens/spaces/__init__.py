"""Two embedding spaces side by side: what fine-tuning, more training or another model changed, token by token.

`diff(model_a, model_b)` compares the input matrices on the tokens both vocabularies hold: each token's nearest
tokens in A and in B, the orthogonal Procrustes alignment of A onto B and what each row keeps after it, the tokens that
moved most; with `contextual=True`, the layers too (`contextual_diff`: linear CKA of every layer pair over the same
word occurrences, and each word's contextual neighbours).
"""

from .contextual import ContextualDiff
from .diff import diff
from .diff_results import SpaceDiff, TokenChange

__all__ = ["ContextualDiff", "SpaceDiff", "TokenChange", "diff"]
