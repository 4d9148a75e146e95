"""Keras 3 layers of ALBERT: embeddings with the E→H projection, the shared transformer, heads."""
