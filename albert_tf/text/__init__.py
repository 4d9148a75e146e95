"""The original ALBERT tokenization (SentencePiece, WordPiece) in Python and in the graph, and
vocabulary training."""
