"""SQuAD v1.1 / v2.0: reading, SentencePiece alignment, features, heads, post-processing, scoring."""
