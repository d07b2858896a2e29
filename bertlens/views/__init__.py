"""Views of many vectors at once: projections to 2-D/3-D (PCA, t-SNE, UMAP) and a word's path across layers."""
