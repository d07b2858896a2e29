"""Views of many vectors at once: projections to 2-D/3-D (PCA, t-SNE, UMAP) and a word's path across layers."""

from .groups import project_word_groups, word_groups
from .projection import Projection, ProjectionSettings, project
from .tokens import project_contextual, project_tokens
from .trajectory import Trajectory, trajectory

__all__ = [
    "Projection",
    "ProjectionSettings",
    "Trajectory",
    "project",
    "project_contextual",
    "project_tokens",
    "project_word_groups",
    "trajectory",
    "word_groups",
]
