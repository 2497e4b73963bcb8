"""Each paper's published numbers, one module per paper, for comparison beside our measurements and for
checking our formulas against the paper's own tables."""
